"""Re-export of :mod:`terminai_apts.action`; ``apts.action.cleanup`` is importable as before."""

from importlib import import_module
from types import ModuleType

__all__ = ["cleanup"]


def __getattr__(name: str) -> ModuleType:
    # Imported on first use, so `python -m apts.action.cleanup` does not import it twice.
    if name == "cleanup":
        return import_module("apts.action.cleanup")
    raise AttributeError(f"module 'apts.action' has no attribute {name!r}")
