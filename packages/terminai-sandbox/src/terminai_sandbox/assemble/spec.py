"""Load and check ``images/sandbox/image.toml``: the declarative image inputs.

The whole file is checked against one declarative schema (:data:`SCHEMA`) before anything
uses it: unknown sections and keys (with a "did you mean" hint), missing ones, wrong
types, numbers out of range and strings that are not what the build passes them to
(package names, sources.list lines, absolute paths, ``NAME=value``). Every refusal is a
:class:`ConfigError` (exit 3) naming the file and the key, with a hint. The result is a
frozen :class:`ImageSpec`; nothing else reads the TOML, so ``build``, ``lock``,
``lock --check``, ``sbom``/``provenance`` and the release refuse a file in the same words.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from terminai_sandbox.common.files import read_input
from terminai_sandbox.errors import ConfigError

# A Linux uid_t/gid_t is 32 bits and 4294967295 is (uid_t)-1, "no id" to chown(2) and
# setresuid(2); 0 is root, which the image's user must never be. The layers are PAX tars,
# which hold any such id, so 1 to 4294967294 is exactly what the build can honour.
MAX_ID = 2**32 - 2

#: The architectures the build can pick wheels for (see python.target_tags).
ARCHITECTURES = ("amd64", "arm64")
#: The OCI platforms image.toml may declare: Linux on one of :data:`ARCHITECTURES`.
PLATFORMS = tuple(f"linux/{arch}" for arch in ARCHITECTURES)
#: The architecture whose locks keep the names they had before platforms were declared
#: (debian.lock, requirements.lock, layers.lock), so its inputs and digests stay the same.
PRIMARY_ARCHITECTURE = "amd64"
#: mmdebstrap's --variant values.
VARIANTS = (
    "extract",
    "custom",
    "essential",
    "apt",
    "required",
    "minbase",
    "buildd",
    "important",
    "debootstrap",
    "standard",
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_REPOSITORY = re.compile(
    r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$"
)
_URL = re.compile(r"^https?://[^\s/]+\S*$")
_SUITE = re.compile(r"^[a-z][a-z0-9.-]*$")
_DEB_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")  # Debian policy 5.6.1
_SOURCES_LINE = re.compile(r"^deb (?:\[[^\]]*\] )?[a-z+]+://\S+ \S+(?: \S+)+$")
_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")  # useradd's default NAME_REGEX, 32 characters
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_SITE = re.compile(r"^/\S*/python3\.[0-9]+/(?:dist|site)-packages$")


@dataclass(frozen=True, slots=True)
class Field:
    """One key: its TOML type, what its value must satisfy (a test or None) and the words for it."""

    kind: type
    must: str
    test: Callable[[Any], bool] | None = None
    items: Callable[[str], bool] | None = None  # for lists of strings: each item's test
    hint: str = ""


def _absolute(value: str) -> bool:
    return value.startswith("/") and ".." not in value.split("/")


def _relative(value: str) -> bool:
    return bool(value) and not value.startswith("/") and ".." not in Path(value).parts


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda value: bool(pattern.match(value))


def _one_of(choices: tuple[str, ...]) -> Callable[[str], bool]:
    return lambda value: value in choices


def _id(value: int) -> bool:
    return 1 <= value <= MAX_ID


_TEXT = "a non-empty string"
_ID = Field(
    int,
    f"a Linux id from 1 to {MAX_ID} (0 is root; {MAX_ID + 1} means no id)",
    _id,
    hint="use an unprivileged id; the image declares 10001",
)

SCHEMA: dict[str, dict[str, Field]] = {
    "image": {
        "repository": Field(str, "an OCI repository name (lowercase, [host/]path)", _matches(_REPOSITORY)),
        "source": Field(str, "an http(s) URL", _matches(_URL)),
        "platforms": Field(
            list, f"a non-empty list of platforms from {', '.join(PLATFORMS)}", bool, _one_of(PLATFORMS)
        ),
    },
    "debian": {
        "suite": Field(str, "a Debian suite name such as 'trixie'", _matches(_SUITE)),
        "variant": Field(str, f"an mmdebstrap variant ({', '.join(VARIANTS)})", _one_of(VARIANTS)),
        "packages": Field(list, "a non-empty list of Debian package names", bool, _matches(_DEB_PACKAGE)),
        "mirrors": Field(list, "a non-empty list of 'deb URL SUITE COMPONENT...' lines", bool, _matches(_SOURCES_LINE)),
    },
    "python": {
        "requirements": Field(str, "a path relative to image.toml's folder, without '..'", _relative),
        "site_packages": Field(str, "an absolute path ending in pythonX.Y/dist-packages", _matches(_SITE)),
    },
    "user": {
        "name": Field(str, "a user name (lowercase letters, digits, '_' and '-', at most 32)", _matches(_USER)),
        "uid": _ID,
        "gid": _ID,
        "home": Field(str, "an absolute path without '..'", _absolute),
    },
    "runtime": {
        "workdir": Field(str, "an absolute path without '..'", _absolute),
        "entrypoint": Field(
            list, "a non-empty list whose first item is an absolute path", lambda v: bool(v) and _absolute(v[0])
        ),
        "cmd": Field(list, "a list of strings"),
        "env": Field(list, "a list of NAME=value strings", None, _matches(_ENV)),
    },
    "slim": {
        "path_exclude": Field(list, "a list of absolute dpkg path patterns", None, _absolute),
        "path_include": Field(list, "a list of absolute dpkg path patterns", None, _absolute),
    },
}
#: Sections that may be left out (their keys are free-form).
OPTIONAL = ("labels",)
_SECTIONS = [*SCHEMA, *OPTIONAL]
_FIX = "fix it in image.toml (see images/sandbox/image.toml for every key)"
#: Keys an older image.toml had, and what replaced them: refused with the new spelling.
_REPLACED = {
    ("debian", "architecture"): (
        "image.platforms",
        'declare the platforms instead: [image] platforms = ["linux/amd64"] (or several)',
    ),
}


def lock_path(path: Path, architecture: str) -> Path:
    """The per-architecture copy of a lock: ``name.ARCH.ext`` beside it, except for the
    primary architecture, whose lock keeps its name (``debian.lock``, ``requirements.lock``)."""
    if architecture == PRIMARY_ARCHITECTURE:
        return path
    return path.with_name(f"{path.stem}.{architecture}{path.suffix}")


def architecture_of(platform: str) -> str:
    """``linux/arm64`` -> ``arm64`` (the platform is one of :data:`PLATFORMS`)."""
    if platform not in PLATFORMS:
        raise ConfigError(f"unknown platform {platform!r}", hint=f"choose from {', '.join(PLATFORMS)}")
    return platform.split("/", 1)[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSpec:
    """Everything ``image.toml`` declares, checked.

    One spec builds one platform: ``architecture`` is the one being built (the first
    declared platform's when loaded), ``platforms`` every platform image.toml declares;
    :meth:`for_platform` gives the spec of another one; its locks (``debian_lock``,
    ``wheels_lock``, ``layers_record``) follow the architecture.
    """

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
    platforms: tuple[str, ...] = ()

    @property
    def platform(self) -> str:
        return f"linux/{self.architecture}"

    @property
    def declared(self) -> tuple[str, ...]:
        """The declared platforms (a spec made in code without any builds its own)."""
        return self.platforms or (self.platform,)

    def select(self, platforms: str | None) -> tuple[str, ...]:
        """The platforms a comma-separated ``--platforms`` value names, checked against the
        declared ones, in declared order; None selects every declared platform."""
        if platforms is None:
            return self.declared
        wanted = [item.strip() for item in platforms.split(",") if item.strip()]
        if not wanted:
            raise ConfigError("--platforms names no platform", hint=f"for example --platforms {self.declared[0]}")
        for item in wanted:
            architecture_of(item)
            self.for_platform(item)
        return tuple(p for p in self.declared if p in wanted)

    def for_platform(self, platform: str) -> ImageSpec:
        """This spec building ``platform``: its architecture, its Debian and wheel locks."""
        if platform not in self.declared:
            raise ConfigError(
                f"{self.directory / 'image.toml'} does not declare the platform {platform}",
                hint=f"it declares {', '.join(self.declared)}; add {platform} to [image] platforms to build it",
            )
        architecture = architecture_of(platform)
        return dataclasses.replace(self, architecture=architecture)

    @property
    def wheels_lock(self) -> Path:
        """The wheel lock of this architecture: ``requirements`` (what image.toml names) for
        the primary one, ``requirements.ARCH.lock`` beside it for another."""
        return lock_path(self.requirements, self.architecture)

    @property
    def debian_lock(self) -> Path:
        return lock_path(self.directory / "debian.lock", self.architecture)

    @property
    def layers_record(self) -> Path:
        """``layers.lock``: the recorded digests of this architecture's lock-only layers."""
        return lock_path(self.directory / "layers.lock", self.architecture)

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


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {int: "an integer", float: "a float", str: "a string", list: "an array", dict: "a table"}.get(
        type(value), type(value).__name__
    )


def _refuse(path: Path, key: str, must: str, value: object, hint: str = "") -> ConfigError:
    shown = repr(value) if not isinstance(value, (list, dict)) else _kind(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ConfigError(f"{path}: {key} must be {must}, not {shown}", hint=hint or _FIX)


def _check_text(path: Path, key: str, value: str) -> None:
    if not value.strip():
        raise _refuse(path, key, _TEXT, value)
    if _CONTROL.search(value):
        raise _refuse(path, key, "text without control characters (a newline, tab or NUL)", value)


def _check_field(path: Path, key: str, field: Field, value: object) -> None:
    if not isinstance(value, field.kind) or isinstance(value, bool):
        raise _refuse(path, key, field.must, value, field.hint)
    if isinstance(value, str):
        _check_text(path, key, value)
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise _refuse(path, f"{key}[{index}]", "a string", item)
            _check_text(path, f"{key}[{index}]", item)
            if field.items is not None and not field.items(item):
                raise _refuse(path, f"{key}[{index}]", f"an item of {field.must}", item, field.hint)
        twice = sorted({item for item in value if value.count(item) > 1})
        if twice:
            raise ConfigError(f"{path}: {key} lists {twice[0]!r} more than once", hint=_FIX)
    if field.test is not None and not field.test(value):
        raise _refuse(path, key, field.must, value, field.hint)


def _check(data: dict[str, Any], path: Path) -> None:
    """Refuse anything :data:`SCHEMA` does not allow, naming the first offending key."""
    for section, value in data.items():
        if section not in _SECTIONS:
            raise ConfigError(f"{path}: unknown section [{section}]", hint=_suggest(section, _SECTIONS))
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: [{section}] must be a table, not {_kind(value)}", hint=_FIX)
        if section == "labels":
            for key, item in value.items():
                if not _LABEL.match(key) or _CONTROL.search(key):
                    raise ConfigError(
                        f"{path}: label {key!r} is not a label name (such as org.opencontainers.image.title)", hint=_FIX
                    )
                if not isinstance(item, str):
                    raise _refuse(path, f"labels.{key!r}", "a string", item)
                if _CONTROL.search(item):
                    raise _refuse(path, f"labels.{key!r}", "text without control characters", item)
            continue
        fields = SCHEMA[section]
        for key, item in value.items():
            if (section, key) in _REPLACED:
                new, hint = _REPLACED[(section, key)]
                raise ConfigError(f"{path}: {section}.{key} was replaced by {new}", hint=hint)
            if key not in fields:
                raise ConfigError(f"{path}: unknown key {section}.{key}", hint=_suggest(key, list(fields)))
            _check_field(path, f"{section}.{key}", fields[key], item)
        for key in fields:
            if key not in value:
                raise ConfigError(
                    f"{path}: missing key {section}.{key}", hint=f"add {section}.{key}: {fields[key].must}"
                )
    for section, fields in SCHEMA.items():
        if section not in data:
            raise ConfigError(f"{path}: missing section [{section}]", hint=f"add [{section}] with {', '.join(fields)}")


def load_spec(path: Path) -> ImageSpec:
    """Read and check ``image.toml``; :class:`ConfigError` names the file and the key."""
    text = read_input(path, what="the image spec")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", hint=_FIX) from None
    _check(data, path)
    directory = path.parent
    platforms = tuple(data["image"]["platforms"])
    return ImageSpec(
        directory=directory,
        repository=data["image"]["repository"],
        source=data["image"]["source"],
        suite=data["debian"]["suite"],
        architecture=architecture_of(platforms[0]),
        platforms=platforms,
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
