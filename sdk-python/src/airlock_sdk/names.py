"""The one name rule (the relay's ``src/names.ts``): wherever a name from the relay becomes a
file on disk, it is cleaned here first."""
from __future__ import annotations

import re
from typing import Optional

MAX_NAME_BYTES = 255
_MAX_EXTENSION_BYTES = 32

#: Control, bidi-override and invisible characters (as the relay's INVISIBLE).
_INVISIBLE = re.compile(
    "[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069"
    "\ufeff\U000e0000-\U000e007f]"
)


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))  # JSON can carry a lone surrogate


def truncate_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` within ``max_bytes`` of UTF-8, never splitting a character."""
    if _utf8_length(text) <= max_bytes:
        return text
    out, used = [], 0
    for char in text:
        used += _utf8_length(char)
        if used > max_bytes:
            break
        out.append(char)
    return "".join(out)


def _js_trim(text: str) -> str:
    # JavaScript's trim(): white space and line terminators (Python's str.strip() is close).
    return text.strip()


def numbered_file_name(name: str, n: int) -> str:
    """``name`` for 0, else ``name (n)`` with the number before the extension, cut to 255 bytes."""
    dot = name.rfind(".")
    has_extension = dot > 0 and _utf8_length(name[dot:]) <= _MAX_EXTENSION_BYTES
    stem = name[:dot] if has_extension else name
    tail = (f" ({n})" if n > 0 else "") + (name[dot:] if has_extension else "")
    return (truncate_utf8(stem, MAX_NAME_BYTES - _utf8_length(tail)) + tail).rstrip()


def clean_file_name(name: str, fallback: str = "file") -> str:
    """A name safe to create in a directory: the last path component only, no control, bidi
    or invisible characters, never empty or dots only (``fallback`` then), at most 255 bytes
    keeping the extension."""
    # A lone surrogate (JSON can carry one) cannot name a file: U+FFFD, as a JS runtime writes it.
    name = name.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    parts = [_js_trim(part) for part in re.split(r"[/\\]", _INVISIBLE.sub("", name))]
    parts = [part for part in parts if part != ""]
    last = parts[-1] if parts else ""
    return fallback if re.fullmatch(r"\.*", last) else numbered_file_name(last, 0)


def file_name_problem(name: str) -> Optional[str]:
    """The first thing wrong with ``name`` under the rule; None when it is clean."""
    if name == "":
        return "must not be empty"
    if re.search(r"[/\\]", name):
        return "must not contain / or \\"
    if _INVISIBLE.search(name):
        return "must not contain control, bidi-override or invisible characters"
    if name in (".", ".."):
        return 'must not be "." or ".."'
    if re.fullmatch(r"\.+", name):
        return "must not be dots only"
    if _js_trim(name) != name:
        return "must not start or end with white space"
    if _utf8_length(name) > MAX_NAME_BYTES:
        return f"must be at most {MAX_NAME_BYTES} bytes"
    return None
