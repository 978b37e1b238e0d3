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


def clean_message(exc: BaseException | str, limit: int = 240, *, with_type: bool = True) -> str:
    """A one-line, printable, bounded rendering of an error (no binary garbage from corrupt files).

    ``with_type``: prefix the exception's class name (``KeyError: 'x'``), as an internal error's report
    needs; a message about the user's file says what is wrong with it in words only
    (``with_type=False``: "database disk image is malformed", not "DatabaseError: ...")."""
    text = str(exc) if not isinstance(exc, BaseException) or str(exc) else type(exc).__name__
    if with_type and isinstance(exc, BaseException) and not isinstance(exc, TraceError):
        text = f"{type(exc).__name__}: {text}"
    text = "".join(ch if ch.isprintable() and ch != "\ufffd" else "?" for ch in text.replace("\n", " "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


_JSON_PROBLEMS = {  # json.JSONDecodeError.msg (CPython) -> a complete, lower-case phrase
    "Expecting value": "expected a value",
    "Unterminated string starting at": "unterminated string",
    "Expecting ',' delimiter": "expected ',' between items",
    "Expecting ':' delimiter": "expected ':' after a key",
    "Expecting property name enclosed in double quotes": "expected a key in double quotes",
    "Extra data": "extra data after the JSON value",
    "Invalid control character at": "a control character (e.g. a raw newline or tab) inside a string",
    "Invalid \\escape": "invalid backslash escape in a string",
    "Invalid \\uXXXX escape": "invalid \\uXXXX escape in a string",
    "Illegal trailing comma before end of object": "trailing comma before the end of an object",
    "Illegal trailing comma before end of array": "trailing comma before the end of a list",
}


def json_error_message(exc) -> str:
    """``malformed JSON at line L, column C: <problem>`` for a ``json.JSONDecodeError``.

    json's own texts ("Unterminated string starting at") read as if cut off; they become complete
    phrases, and a problem at the end of the text (an unterminated string, a missing value or
    delimiter there) adds "(the file may be truncated)".
    """
    problem = _JSON_PROBLEMS.get(exc.msg, exc.msg[:1].lower() + exc.msg[1:])
    doc = exc.doc if isinstance(exc.doc, str) else ""
    at_end = exc.pos >= len(doc.rstrip())
    if exc.msg == "Unterminated string starting at" or (at_end and exc.msg.startswith("Expecting")):
        problem += " (the file may be truncated)"
    return clean_message(f"malformed JSON at line {exc.lineno}, column {exc.colno}: {problem}")
