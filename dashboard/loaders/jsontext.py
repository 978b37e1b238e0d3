"""JSON file bytes -> a decoded value, with one clear message per way a JSON file can be bad.

Shared by the summary-JSON and Kineto loaders.
"""

from __future__ import annotations

import decimal
import json

from dashboard.errors import TraceFormatError, json_error_message


def decode_json(raw: bytes, name: str, *, exact: bool = False, too_large: str = "too large") -> object:
    """Decode the bytes of a JSON file named ``name`` (a UTF-8 byte-order mark is allowed).

    Args:
        exact: parse non-integers (and NaN/Infinity) as ``decimal.Decimal`` instead of binary floats.
        too_large: what the message calls a number Python cannot hold (an integer of over 4,300
            digits; with ``exact``, a decimal exponent out of range).

    Returns:
        The decoded value (any JSON type).

    Raises:
        TraceFormatError: ``"<name>: ..."``: empty (or only whitespace), not UTF-8 (with the byte
            offset), malformed (line, column and what is wrong), nested too deeply, or a number
            too large.
    """
    if not raw or raw.isspace():  # no copy of a large file, unlike raw.strip()
        raise TraceFormatError(f"{name}: the file is empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"{name}: not UTF-8 text (invalid byte at offset {exc.start})") from None
    del raw  # the caller passes a temporary: the bytes can go before the (larger) decoded objects exist
    try:
        if exact:
            return json.loads(text, parse_float=decimal.Decimal, parse_constant=decimal.Decimal)
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"{name}: {json_error_message(exc)}") from None
    except RecursionError:
        raise TraceFormatError(f"{name}: JSON nested too deeply") from None
    except (ValueError, ArithmeticError):  # int over 4,300 digits; decimal exponent out of range
        raise TraceFormatError(f"{name}: holds a number {too_large}") from None
