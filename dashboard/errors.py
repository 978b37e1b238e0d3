"""Domain errors: every problem with user input is one of these, never a bare traceback."""

from __future__ import annotations


class TraceError(Exception):
    """Base class for problems with a trace or its input; ``str(err)`` is a user-facing message.

    The CLI prints the message and exits with code 2; the dashboard shows it as an alert.
    """


class TraceNotFoundError(TraceError):
    """The trace file or trace id does not exist (or is not a regular file)."""


class TraceFormatError(TraceError):
    """The file exists but is not a readable nsys SQLite export or seed-format summary JSON."""


def clean_message(exc: BaseException | str, limit: int = 240) -> str:
    """A one-line, printable, bounded rendering of an error (no binary garbage from corrupt files)."""
    text = str(exc) if not isinstance(exc, BaseException) or str(exc) else type(exc).__name__
    if isinstance(exc, BaseException) and not isinstance(exc, TraceError):
        text = f"{type(exc).__name__}: {text}"
    text = "".join(ch if ch.isprintable() else "?" for ch in text.replace("\n", " "))
    return text if len(text) <= limit else text[: limit - 1] + "…"
