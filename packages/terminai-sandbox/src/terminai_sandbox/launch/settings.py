"""The engine choice from the user's TerminAI settings file, ``$HOME/.terminai/settings.json``.

The launcher we replace reads ``tools.sandbox`` there (older files: a top-level
``sandbox``, which TerminAI migrates to ``tools.sandbox``; when both exist the nested one
wins). The value is ``true``/``false`` or an engine name; this module only extracts it,
and :func:`terminai_sandbox.launch.config.parse_engine` validates it, naming "settings".

TerminAI parses the file after stripping ``//`` and ``/* */`` comments, so a file it
accepts is accepted here too. Anything it would refuse, or that is not a boolean or a
string where the engine belongs, is a :class:`ConfigError`: a broken settings file never
silently means "use the default".

``tools.sandboxRuntime`` (``"runc"``, ``"runsc"`` or ``"gvisor"``) chooses the container
runtime the same way (:meth:`SettingsFile.runtime`; validated by
:func:`terminai_sandbox.engine.runtime.parse_runtime`).

Every command that honours the file (``run``, ``preflight``, ``engine status``) reads it
through :class:`SettingsFile`, so a directory, FIFO or device there, or a file that is not
JSON, is refused alike (exit 3, the path named, a hint).

This runs on every launch: it imports only json and pathlib and reads the file only when
called.
"""

from __future__ import annotations

import json
from pathlib import Path

from terminai_sandbox.common.files import read_regular
from terminai_sandbox.errors import ConfigError

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Mapping

ACCEPTED = 'true, false, "docker" or "podman"'
#: TerminAI's settings files are a few KB; anything far larger is not one.
MAX_SETTINGS = 4 << 20


def settings_path(env: Mapping[str, str]) -> Path | None:
    """``$HOME/.terminai/settings.json``, or ``None`` when ``HOME`` is unset or empty."""
    home = env.get("HOME", "")
    return Path(home) / ".terminai" / "settings.json" if home else None


class SettingsFile:
    """The user's settings file, read at most once, and only when a value is asked for:
    a launch that needs both the engine and the runtime from it reads it once."""

    __slots__ = ("_env", "_loaded", "_read")

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self._read = False
        self._loaded: tuple[Path, dict[str, object]] | None = None

    def _tools(self, holding: str) -> tuple[Path, dict[str, object], dict[str, object]] | None:
        """The file's path, its document and its ``tools`` object (``{}`` when absent)."""
        if not self._read:
            self._loaded, self._read = _load(self._env), True
        if self._loaded is None:
            return None
        path, document = self._loaded
        tools = document.get("tools", {})
        if not isinstance(tools, dict):
            raise _value_error(path, "tools", f"is {_kind(tools)}; it must be an object holding '{holding}'")
        return path, document, tools

    def engine(self) -> str | None:
        """The sandbox engine the file names, or ``None`` if it names none.

        A boolean becomes ``"true"``/``"false"``; a string is returned as written. A missing
        file or key is ``None``; a file that cannot be read or parsed, or a value of another
        type, raises :class:`ConfigError` naming the file and the key.
        """
        found = self._tools("sandbox")
        if found is None:
            return None
        path, document, tools = found
        if "sandbox" in tools:
            return _engine_value(path, "tools.sandbox", tools["sandbox"])
        if "sandbox" in document:
            return _engine_value(path, "sandbox", document["sandbox"])
        return None

    def runtime(self) -> str | None:
        """The container runtime named by ``tools.sandboxRuntime``, or ``None``.

        The value is returned as written (``runc``, ``runsc``, ``gvisor``); it must be a
        string. :func:`terminai_sandbox.engine.runtime.parse_runtime` validates it.
        """
        found = self._tools("sandboxRuntime")
        if found is None or "sandboxRuntime" not in found[2]:
            return None
        path, _, tools = found
        value = tools["sandboxRuntime"]
        if not isinstance(value, str):
            raise ConfigError(
                f"in the settings file {path}, tools.sandboxRuntime is {_kind(value)}; it must be a runtime name",
                hint='write "tools": {"sandboxRuntime": "runc"} (or "runsc", "gvisor"), or remove it',
            )
        return value

    def network(self) -> object:
        """The top-level ``network`` value (a policy string or the dict form), or ``None``.

        :func:`terminai_sandbox.launch.network.resolve` parses it; nothing is checked here.
        """
        if not self._read:
            self._loaded, self._read = _load(self._env), True
        if self._loaded is None:
            return None
        return self._loaded[1].get("network")


def _load(env: Mapping[str, str]) -> tuple[Path, dict[str, object]] | None:
    """The settings file's path and its JSON object; None when there is no file."""
    path = settings_path(env)
    if path is None:
        return None
    try:
        # Not read_bytes: a FIFO there would hang every command, /dev/zero would fill memory.
        raw = read_regular(path, limit=MAX_SETTINGS)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _file_error(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        document = json.loads(strip_comments(raw.decode("utf-8")))
    except UnicodeDecodeError:
        raise _file_error(path, "is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise _file_error(path, f"is not valid JSON ({where})") from None
    if not isinstance(document, dict):
        raise _file_error(path, f"holds {_kind(document)}, not a JSON object")
    return path, document


def _engine_value(path: Path, key: str, value: object) -> str:
    # bool before anything numeric: in Python True is also an int.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    raise _value_error(path, key, f"is {_kind(value)}; it must be a boolean or an engine name")


def strip_comments(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments outside strings replaced by spaces.

    Newlines are kept, so a JSON error still points at the right line and column. An
    unterminated block comment is left in place for the JSON parser to refuse.
    """
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = _string_end(text, index)
            out.append(text[index:end])
            index = end
        elif text.startswith("//", index):
            end = text.find("\n", index)
            end = length if end == -1 else end
            out.append(" " * (end - index))
            index = end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            if end == -1:
                out.append(text[index:])
                break
            end += 2
            out.append("".join(c if c in "\r\n" else " " for c in text[index:end]))
            index = end
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    """Index just past the JSON string opening at ``start`` (or the end of an unterminated one)."""
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
        elif text[index] == '"':
            return index + 1
        else:
            index += 1
    return len(text)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a string"


def _file_error(path: Path, problem: str) -> ConfigError:
    return ConfigError(
        f"the settings file {path} {problem}; the launcher reads the sandbox engine (tools.sandbox) and runtime "
        "(tools.sandboxRuntime) from it",
        hint=f"fix {path} (// and /* */ comments are allowed) or move it aside",
    )


def _value_error(path: Path, key: str, problem: str) -> ConfigError:
    return ConfigError(
        f"in the settings file {path}, {key} {problem}",
        hint=f'write "tools": {{"sandbox": VALUE}} with VALUE one of {ACCEPTED}, or remove {key}',
    )
