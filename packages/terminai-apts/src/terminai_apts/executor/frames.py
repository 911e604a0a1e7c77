"""Length-prefixed frames between the host and a run, and the host's check of results.

Everything the sandboxed process sends is hostile input: a frame larger than the cap, a
payload that is not JSON, or a result that does not have exactly the expected fields
and types is a ``FrameError``, which ends the run as a failed result. The host derives
nothing from the child's claims about limits: ``output_truncated`` is recomputed here
and ``timed_out``/``memory_exceeded``/``session_ended`` are decided by the host alone.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

_HEADER = struct.Struct(">I")
# Room for the fields around stdout (errors are capped at 4,000 characters in the child;
# JSON escaping can grow a character to 12 bytes).
FRAME_OVERHEAD = 64 * 1024
MAX_ERROR_CHARS = 4_000
# The zygote's answer to an end whose grace the run outlived (it closed its result pipe and
# kept running, so the zygote killed it): not a wait status, which is never negative.
OUTLIVED_GRACE = -1


class FrameError(Exception):
    """The other side sent something that is not a valid frame."""


def encode(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload)) + payload


def write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(encode(payload))
    while view:
        view = view[os.write(fd, view) :]


def read_frame(fd: int, limit: int) -> bytes | None:
    """One frame from a blocking ``fd`` (None at a clean end of stream)."""
    head = _read_exact(fd, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > limit:
        raise FrameError(f"frame of {size} bytes exceeds the {limit}-byte limit")
    body = _read_exact(fd, size)
    if body is None:
        raise FrameError("stream ended inside a frame")
    return body


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class FrameReader:
    """Incremental reader for a non-blocking loop: feed bytes, take whole frames."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def take(self, limit: int) -> bytes | None:
        """The next whole frame (None until one is complete); the rest stays buffered."""
        if len(self.buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self.buffer)
        if size > limit:
            raise FrameError(f"frame of {size} bytes exceeds the {limit}-byte limit")
        end = _HEADER.size + size
        if len(self.buffer) < end:
            return None
        frame = bytes(self.buffer[_HEADER.size : end])
        del self.buffer[:end]
        return frame


# field -> accepted types (bool is checked before int: it is a subclass).
_RESULT_FIELDS: dict[str, tuple[type, ...]] = {
    "success": (bool,),
    "stdout": (str,),
    "output_truncated": (bool,),
    "error": (str, type(None)),
    "error_type": (str, type(None)),
    "memory_exceeded": (bool,),
    "violations": (list,),
    "refused_by": (str, type(None)),
    "line": (int,),
    "seq": (int,),
}
_MAX_NAME = 200


def _is_text(value: str) -> bool:
    """JSON escapes can carry lone surrogates, which no output stream can encode."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_result(payload: bytes, seq: int) -> dict[str, Any]:
    """The child's answer to the cell whose request carried ``seq`` (a random number the
    run learns only by reading that request), checked field by field (``FrameError`` if
    not): an answer written before the request was read, or kept from another cell,
    has another ``seq``."""
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"result frame is not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict) or set(data) != set(_RESULT_FIELDS):
        raise FrameError("result frame does not have the expected fields")
    for name, types in _RESULT_FIELDS.items():
        value = data[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise FrameError(f"result field {name!r} has the wrong type")
        if isinstance(value, str) and not _is_text(value):
            raise FrameError(f"result field {name!r} is not valid text (a lone surrogate)")
    if data["violations"] or not 0 <= data["line"] < 1 << 31:
        raise FrameError("result frame carries impossible values")
    if data["seq"] != seq:
        raise FrameError("result frame answers another cell than the one asked")
    del data["seq"]
    for name in ("error_type", "refused_by"):
        if data[name] is not None and len(data[name]) > _MAX_NAME:
            raise FrameError(f"result field {name!r} is too long")
    return dict(data)
