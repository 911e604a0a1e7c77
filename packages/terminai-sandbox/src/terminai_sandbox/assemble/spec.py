"""Load and check ``images/sandbox/image.toml``: the declarative image inputs.

Unknown keys are errors with a "did you mean" hint; types are checked strictly. The
result is a frozen :class:`ImageSpec`; nothing else reads the TOML.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.errors import ConfigError

_SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "image": {"repository": str, "source": str},
    "debian": {"suite": str, "architecture": str, "variant": str, "packages": list, "mirrors": list},
    "python": {"requirements": str, "site_packages": str},
    "user": {"name": str, "uid": int, "gid": int, "home": str},
    "runtime": {"workdir": str, "entrypoint": list, "cmd": list, "env": list},
    "labels": {},
    "slim": {"path_exclude": list, "path_include": list},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSpec:
    """Everything ``image.toml`` declares, checked."""

    directory: Path
    repository: str
    source: str
    suite: str
    architecture: str
    variant: str
    packages: tuple[str, ...]
    mirrors: tuple[str, ...]
    requirements: Path
    site_packages: str
    user: str
    uid: int
    gid: int
    home: str
    workdir: str
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    env: tuple[str, ...]
    labels: tuple[tuple[str, str], ...]
    path_exclude: tuple[str, ...]
    path_include: tuple[str, ...]

    @property
    def debian_lock(self) -> Path:
        return self.directory / "debian.lock"

    @property
    def build_requirements(self) -> Path:
        """The locked build backend of the T-APTS wheel."""
        return self.directory / "requirements-build.lock"

    @property
    def entrypoint_script(self) -> Path:
        return self.directory / "entrypoint"


def _suggest(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(sorted(known))}"


def _check(data: dict[str, Any], path: Path) -> None:
    for section, value in data.items():
        if section not in _SCHEMA:
            raise ConfigError(f"{path}: unknown section [{section}]", hint=_suggest(section, list(_SCHEMA)))
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: [{section}] must be a table")
        fields = _SCHEMA[section]
        for key, item in value.items():
            if section == "labels":
                if not isinstance(item, str):
                    raise ConfigError(f"{path}: label {key!r} must be a string")
                continue
            if key not in fields:
                raise ConfigError(f"{path}: unknown key {section}.{key}", hint=_suggest(key, list(fields)))
            if not isinstance(item, fields[key]) or isinstance(item, bool):
                raise ConfigError(f"{path}: {section}.{key} must be a {fields[key].__name__}")  # type: ignore[union-attr]
            if isinstance(item, list) and not all(isinstance(x, str) for x in item):
                raise ConfigError(f"{path}: {section}.{key} must be a list of strings")
        for key in fields:
            if key not in value:
                raise ConfigError(f"{path}: missing key {section}.{key}")
    for section in _SCHEMA:
        if section not in data and section != "labels":
            raise ConfigError(f"{path}: missing section [{section}]")


def load_spec(path: Path) -> ImageSpec:
    """Read and check ``image.toml``; :class:`ConfigError` names the file and the key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    _check(data, path)
    for key in ("uid", "gid"):
        value = data["user"][key]
        if value == 0:
            raise ConfigError(f"{path}: the image user must not be root (user.{key} 0)")
        # A Linux id is 32 bits and 4294967295 means "no id": anything else fails deep in a build.
        if not 0 < value < 2**32 - 1:
            raise ConfigError(
                f"{path}: user.{key} {value} is not a Linux id",
                hint="use a number from 1 to 4294967294 (the image declares 10001)",
            )
    directory = path.parent
    return ImageSpec(
        directory=directory,
        repository=data["image"]["repository"],
        source=data["image"]["source"],
        suite=data["debian"]["suite"],
        architecture=data["debian"]["architecture"],
        variant=data["debian"]["variant"],
        packages=tuple(data["debian"]["packages"]),
        mirrors=tuple(data["debian"]["mirrors"]),
        requirements=directory / data["python"]["requirements"],
        site_packages=data["python"]["site_packages"],
        user=data["user"]["name"],
        uid=data["user"]["uid"],
        gid=data["user"]["gid"],
        home=data["user"]["home"],
        workdir=data["runtime"]["workdir"],
        entrypoint=tuple(data["runtime"]["entrypoint"]),
        cmd=tuple(data["runtime"]["cmd"]),
        env=tuple(data["runtime"]["env"]),
        labels=tuple(sorted(data.get("labels", {}).items())),
        path_exclude=tuple(data["slim"]["path_exclude"]),
        path_include=tuple(data["slim"]["path_include"]),
    )
