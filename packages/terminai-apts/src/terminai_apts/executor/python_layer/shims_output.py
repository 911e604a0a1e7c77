"""``pprint``, ``logging`` and ``warnings`` in the sandbox: they write to the run's
captured output (what ``print`` writes to), the only stream a caller reads; the real ones
write to the run's ``sys.stdout``/``sys.stderr``, which nobody reads, and hand out
handlers, managers and frames."""

from __future__ import annotations

import pprint as _pprint
from typing import Any

from terminai_apts.executor.python_layer import output
from terminai_apts.executor.python_layer.wrappers import SafeCallable, SandboxViolation, Sealed


def _pformat(obj: object, indent: int = 1, width: int = 80, depth: int | None = None, **kwargs: Any) -> str:
    return _pprint.pformat(
        obj,
        indent=indent,
        width=width,
        depth=depth,
        compact=bool(kwargs.get("compact", False)),
        sort_dicts=bool(kwargs.get("sort_dicts", True)),
        underscore_numbers=bool(kwargs.get("underscore_numbers", False)),
    )


def _pprint_fn(obj: object, stream: object = None, **kwargs: Any) -> None:
    if stream is not None:
        raise SandboxViolation("pprint(stream=...) is not allowed; it prints to the output")
    output.active_write(_pformat(obj, **kwargs) + "\n")


PPRINT: dict[str, object] = {
    "pprint": SafeCallable(_pprint_fn, "pprint.pprint"),
    "pp": SafeCallable(_pprint_fn, "pprint.pp"),
    "pformat": SafeCallable(_pformat, "pprint.pformat"),
}

LEVELS = {"CRITICAL": 50, "ERROR": 40, "WARNING": 30, "INFO": 20, "DEBUG": 10, "NOTSET": 0}
_LOG_STATE: dict[str, object] = {"level": 30, "format": "%(levelname)s:%(name)s:%(message)s"}


def _log(name: str, level: int, message: object, args: tuple[object, ...]) -> None:
    threshold = _LOG_STATE["level"]
    assert isinstance(threshold, int)
    if level < threshold:
        return
    text = str(message) % args if args else str(message)
    levelname = next((k for k, v in LEVELS.items() if v == level), f"Level {level}")
    fmt = str(_LOG_STATE["format"])
    fields = {"levelname": levelname, "name": name, "message": text, "levelno": level}
    try:
        line = fmt % fields
    except (KeyError, ValueError, TypeError):
        line = f"{levelname}:{name}:{text}"
    output.active_write(line + "\n")


class Logger(metaclass=Sealed):
    """``logging.getLogger(name)``: records at or above the configured level are written
    to the run's output (the only stream a caller reads)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _at(self, level: int, message: object, args: tuple[object, ...]) -> None:
        _log(object.__getattribute__(self, "_name"), level, message, args)

    def debug(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(10, message, args)

    def info(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(20, message, args)

    def warning(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(30, message, args)

    def error(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(40, message, args)

    def exception(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(40, message, args)

    def critical(self, message: object, *args: object, **kwargs: object) -> None:
        self._at(50, message, args)

    def log(self, level: int, message: object, *args: object, **kwargs: object) -> None:
        self._at(int(level), message, args)

    def setLevel(self, level: object) -> None:  # noqa: N802 - logging's name
        _basic_config(level=level)

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("loggers are read-only")

    def __repr__(self) -> str:
        return f"<Logger {object.__getattribute__(self, '_name')}>"


def _basic_config(**kwargs: object) -> None:
    level = kwargs.get("level")
    if isinstance(level, str):
        level = LEVELS.get(level.upper(), 30)
    if isinstance(level, int):
        _LOG_STATE["level"] = level
    fmt = kwargs.get("format")
    if isinstance(fmt, str):
        _LOG_STATE["format"] = fmt


_LOGGERS: dict[str, Logger] = {}


def _get_logger(name: object = None) -> Logger:
    key = "root" if name is None else str(name)
    if key not in _LOGGERS:
        _LOGGERS[key] = Logger(key)
    return _LOGGERS[key]


_ROOT = _get_logger()
LOGGING: dict[str, object] = {
    **LEVELS,
    "basicConfig": SafeCallable(_basic_config, "logging.basicConfig"),
    "getLogger": SafeCallable(_get_logger, "logging.getLogger"),
    "debug": _ROOT.debug,
    "info": _ROOT.info,
    "warning": _ROOT.warning,
    "error": _ROOT.error,
    "exception": _ROOT.exception,
    "critical": _ROOT.critical,
    "log": _ROOT.log,
}


_WARN_STATE: dict[str, bool] = {"ignore": False}


def _warn(message: object, category: object = None, stacklevel: int = 1, **kwargs: object) -> None:
    if _WARN_STATE["ignore"]:
        return
    kind = getattr(category, "__name__", "UserWarning") if category is not None else "UserWarning"
    output.active_write(f"{kind}: {message}\n")


def _filter(action: object = "default", *args: object, **kwargs: object) -> None:
    """Only the action counts: ``"ignore"`` silences every warning, anything else shows them."""
    _WARN_STATE["ignore"] = action == "ignore"


class _CatchWarnings(metaclass=Sealed):
    """``with warnings.catch_warnings():`` restores the filter on exit."""

    __slots__ = ("_saved",)

    def __init__(self) -> None:
        object.__setattr__(self, "_saved", _WARN_STATE["ignore"])

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        _WARN_STATE["ignore"] = object.__getattribute__(self, "_saved")

    def __setattr__(self, key: str, value: object) -> None:
        raise SandboxViolation("read-only")


def _catch_warnings(**kwargs: object) -> _CatchWarnings:
    return _CatchWarnings()


WARNINGS: dict[str, object] = {
    "warn": SafeCallable(_warn, "warnings.warn"),
    "filterwarnings": SafeCallable(_filter, "warnings.filterwarnings"),
    "simplefilter": SafeCallable(_filter, "warnings.simplefilter"),
    "catch_warnings": SafeCallable(_catch_warnings, "warnings.catch_warnings"),
    "UserWarning": UserWarning,
    "DeprecationWarning": DeprecationWarning,
    "RuntimeWarning": RuntimeWarning,
    "Warning": Warning,
}
