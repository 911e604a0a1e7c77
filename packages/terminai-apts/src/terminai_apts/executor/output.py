"""Layer 4: bounded capture of a cell's ``print`` output."""

from __future__ import annotations

from terminai_apts.executor.wrappers import SandboxViolation, Sealed


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
        encoded = text.encode("utf-8", "replace")
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
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("sep and end must be strings")
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
