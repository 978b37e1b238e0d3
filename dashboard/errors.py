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
