"""Layer 4: bounded capture of a cell's ``print`` output; the result frame that carries
it; and the JSON the CLI prints of it.

In the run the cap is on the text (its UTF-8 bytes): escaping grows a ``"`` to two
bytes and a control character to six, which the host's frame limit (``6 × max_output``
plus room for the other fields) always has room for. What the CLI prints is capped
again after escaping (``fit_escaped``, ``terminal_line``): ``--max-output`` bounds the
bytes a reader gets, escapes included. Whenever text is cut, ``output_truncated`` says so.
"""

from __future__ import annotations

import json
import re
from typing import Any

from terminai_apts.executor import frames
from terminai_apts.executor.python_layer.wrappers import SandboxViolation, Sealed


class OutputBuffer:
    """Bounded capture shared by every `print` in one cell (layer 4)."""

    __slots__ = ("limit", "parts", "size", "truncated")

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.truncated = False
        # The newest buffer is the run's (a run builds its own after the zygote's warm-up):
        # `pprint`, `logging` and `warnings` write to it.
        _ACTIVE[:] = [self]

    def write(self, text: str) -> None:
        room = self.limit - self.size
        if room <= 0:
            self.truncated = self.truncated or bool(text)
            return
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (chr(0xDC80)): kept visible as their escapes
            encoded = text.encode("utf-8", "backslashreplace")
            text = encoded.decode("utf-8")
        if len(encoded) > room:
            text = encoded[:room].decode("utf-8", "ignore")
            self.truncated = True
            encoded = text.encode("utf-8")
        self.parts.append(text)
        self.size += len(encoded)

    def text(self) -> str:
        return "".join(self.parts)


_ACTIVE: list[OutputBuffer] = []


def active_write(text: str) -> None:
    """Write to the run's output buffer (what ``print`` writes to)."""
    if _ACTIVE:
        _ACTIVE[0].write(text)


class _Printer(metaclass=Sealed):
    """What RestrictedPython's ``_print_(_getattr_)`` returns for one scope."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer: OutputBuffer) -> None:
        object.__setattr__(self, "_buffer", buffer)

    def _call_print(
        self, *objects: object, sep: object = " ", end: object = "\n", file: object = None, flush: bool = False
    ) -> None:
        if file is not None:
            raise SandboxViolation("print(file=...) is not allowed")
        sep = " " if sep is None else sep  # None means the default, as in CPython
        end = "\n" if end is None else end
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("sep and end must be None or a string")
        object.__getattribute__(self, "_buffer").write(sep.join(str(o) for o in objects) + end)

    def __call__(self) -> str:  # the `printed` name
        text: str = object.__getattribute__(self, "_buffer").text()
        return text

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("print is read-only")


class PrintFactory(metaclass=Sealed):
    """The ``_print_`` global: a slotted callable (no class, no closure is handed out)."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer: OutputBuffer) -> None:
        object.__setattr__(self, "_buffer", buffer)

    def __call__(self, _getattr_: object = None) -> _Printer:
        return _Printer(object.__getattribute__(self, "_buffer"))

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("print is read-only")


def _escaped(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def encode_result(result: dict[str, Any], max_output: int) -> bytes:
    """A cell's result frame. ``stdout`` was capped at ``max_output`` bytes of text by the
    buffer, so its JSON form fits the host's limit; if the whole frame still would not,
    ``stdout`` is cut as text and ``output_truncated`` set (never cut silently)."""
    limit = 6 * max_output + frames.FRAME_OVERHEAD
    try:
        payload = json.dumps(result, ensure_ascii=False, default=str).encode()
    except UnicodeEncodeError:  # a lone surrogate (in an error message): shown as its escape
        result = {k: _escaped(v) if isinstance(v, str) else v for k, v in result.items()}
        payload = json.dumps(result, ensure_ascii=False, default=str).encode()
    except (MemoryError, ValueError):
        result = {**result, "stdout": "", "output_truncated": True}
        payload = json.dumps(result, default=str).encode()
    while len(payload) > limit and result["stdout"]:
        result = {**result, "stdout": result["stdout"][: len(result["stdout"]) // 2], "output_truncated": True}
        payload = json.dumps(result, ensure_ascii=False, default=str).encode()
    return payload


# Characters that reorder or hide text on a terminal or in a viewer, written as \u escapes
# in the JSON the CLI prints (json.dumps escapes only C0 controls, quote and backslash):
# C1 controls, bidi embeddings, overrides, isolates and marks, line/paragraph separators,
# the byte-order mark.
_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def json_line(value: object) -> str:
    """``value`` as one line of JSON, UTF-8 text kept readable, every character that could
    reorder or hide what a reader sees escaped. (Such characters can only occur inside
    JSON strings, where ``\\uXXXX`` means the same character.)"""
    text = json.dumps(value, ensure_ascii=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _escaped_size(text: str) -> int:
    return len(json_line(text).encode("utf-8", "surrogatepass")) - 2  # without the quotes


_FIT_CHUNK = 4096


def fit_escaped(text: str, limit: int) -> tuple[str, bool]:
    """The longest prefix of ``text`` whose form in ``json_line`` (escapes included, the
    quotes not) is at most ``limit`` bytes, and whether it was cut. Each character is
    escaped on its own, so sizes add up chunk by chunk: one pass to the chunk where the
    limit falls, then a binary search inside it (linear in what is kept; a search over the
    whole text took 2.4 s for a megabyte of bidi marks)."""
    used = 0
    for start in range(0, len(text), _FIT_CHUNK):
        chunk = text[start : start + _FIT_CHUNK]
        size = _escaped_size(chunk)
        if used + size > limit:
            low, high = 0, len(chunk) - 1  # the whole chunk does not fit
            while low < high:
                middle = (low + high + 1) // 2
                if used + _escaped_size(chunk[:middle]) <= limit:
                    low = middle
                else:
                    high = middle - 1
            return text[: start + low], True
        used += size
    return text, False


# C0 controls (newline and tab included: an error is one line), and what ``_UNSAFE`` holds.
_TERMINAL_UNSAFE = re.compile("[\x00-\x1f" + _UNSAFE.pattern[1:])


def terminal_line(text: str, limit: int) -> str:
    """``text`` as one line a terminal shows as it is: every control, bidi or hiding
    character written as its escape (``\\x1b``, ``\\u202e``), then cut to ``limit``
    UTF-8 bytes (escapes included; ``…`` ends a cut line)."""

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    line = _TERMINAL_UNSAFE.sub(escape, text.encode("utf-8", "backslashreplace").decode("utf-8"))
    data = line.encode("utf-8")
    if len(data) <= limit:
        return line
    return data[: max(0, limit - 3)].decode("utf-8", "ignore") + "…"
