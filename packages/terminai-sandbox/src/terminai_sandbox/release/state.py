"""The persisted state of one release: which steps passed, for which image digest.

A release is a chain of steps (:data:`STEPS`); each records its outcome in
``dist/X.Y.Z/release-state.json``. The steps can therefore run in separate processes (the
CI jobs, each with only the permissions its step needs) and a release that stopped resumes
where it stopped. The state is keyed by the built image's manifest digest: a step refuses
a state written for another image, and recording a step forgets every later one, so a
re-signed image is verified and tagged again.

A multi-platform release (``release --platforms``) has the same steps over one image
index: the state's digest is the index's, and :attr:`ReleaseState.platforms` names each
platform's manifest and config digest. Its records carry one entry per platform where a
step does work per platform (contracts, describe), checked by :data:`INDEX_RECORDS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from terminai_apts import durable

from terminai_sandbox.common.files import read_regular
from terminai_sandbox.errors import ReleaseError

STATE_FILE = "release-state.json"
FORMAT = 1

#: The steps in the order they run; each needs every step before it.
STEPS = ("build", "contracts", "describe", "push", "sign", "verify", "tag", "manifest")


# What each step's record must hold, checked when the state is loaded, so that a later step
# (``manifest`` above all) never meets a record without the key it reads. ``str`` is a
# non-empty string; a dict maps a key to what its value must be; ``dict`` is any object.
_FILE = {"path": str, "sha256": str}
RECORDS: dict[str, dict[str, Any]] = {
    "build": {"manifest_digest": str, "config_digest": str},
    "contracts": {"ok": bool, "version": str, "summary": str},
    "describe": {"sbom": _FILE, "provenance": _FILE, "locks": dict},
    "push": {"reference": str},
    "sign": {},  # what the signer recorded: a key id or keyless, all of it copied into release.json
    "verify": {"verified": dict},
    "tag": {"tag": str},
    "manifest": {"path": str, "sha256": str},
}


@dataclass(frozen=True, slots=True)
class Each:
    """A shape for an object mapping each platform (``os/arch``) to a record of ``shape``."""

    shape: dict[str, Any]


_PLATFORM_FILES = Each({"sbom": _FILE, "provenance": _FILE})
#: The records of an index release: per-platform entries where the step works per platform.
INDEX_RECORDS: dict[str, dict[str, Any]] = {
    **RECORDS,
    "build": {"manifest_digest": str, "platforms": Each({"manifest_digest": str, "config_digest": str})},
    "contracts": {**RECORDS["contracts"], "platforms": Each({"ok": bool, "summary": str})},
    "describe": {"locks": dict, "platforms": _PLATFORM_FILES},
}


def _check_record(where: str, record: object, shape: dict[str, Any]) -> None:
    """Raise ValueError naming ``where`` and the first key of ``record`` that ``shape`` refuses."""
    if not isinstance(record, dict):
        raise ValueError(f"{where} must be an object")
    for key, want in shape.items():
        if key not in record:
            raise ValueError(f"{where} has no {key!r}")
        value = record[key]
        if isinstance(want, Each):
            if not isinstance(value, dict) or not value:
                raise ValueError(f"{where}.{key} must map each platform to a record")
            for platform, item in value.items():
                _check_record(f"{where}.{key}[{platform!r}]", item, want.shape)
        elif isinstance(want, dict):
            _check_record(f"{where}.{key}", value, want)
        elif want is str and not (isinstance(value, str) and value):
            raise ValueError(f"{where}.{key} must be a non-empty string")
        elif want is bool and not isinstance(value, bool):
            raise ValueError(f"{where}.{key} must be true or false")
        elif want is dict and not isinstance(value, dict):
            raise ValueError(f"{where}.{key} must be an object")


def _command(step: str) -> str:
    return f"terminai-sandbox release {step}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseState:
    version: str
    repository: str
    manifest_digest: str
    config_digest: str  # "" for an index (each platform has its own)
    steps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: An index release: platform (``os/arch``) -> its manifest and config digests; else empty.
    platforms: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def is_index(self) -> bool:
        return bool(self.platforms)

    @classmethod
    def path(cls, target: Path) -> Path:
        return target / STATE_FILE

    @classmethod
    def load(cls, target: Path) -> ReleaseState:
        path = cls.path(target)
        try:
            raw = json.loads(read_regular(path).decode("utf-8"))  # a FIFO or device is refused, not waited on
        except FileNotFoundError:
            raise ReleaseError(
                f"no release state in {target}", hint=f"start the release with '{_command('build')}'"
            ) from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ReleaseError(
                f"the release state {path} cannot be read: {exc}",
                hint=f"remove it and start again with '{_command('build')}'",
            ) from None
        try:
            if raw["format"] != FORMAT:
                raise ValueError(f"format {raw['format']!r}, expected {FORMAT}")
            steps = raw["steps"]
            if not isinstance(steps, dict) or not all(isinstance(v, dict) and k in STEPS for k, v in steps.items()):
                raise ValueError("'steps' must map step names to records")
            platforms = _platforms(raw.get("platforms", {}))
            shapes = INDEX_RECORDS if platforms else RECORDS
            for name, record in steps.items():
                _check_record(f"the record of step '{name}'", record, shapes[name])
            state = cls(
                version=_text(raw, "version"),
                repository=_text(raw, "repository"),
                manifest_digest=_text(raw, "manifest_digest"),
                config_digest=raw["config_digest"]
                if platforms and raw["config_digest"] == ""
                else _text(raw, "config_digest"),
                steps=steps,
                platforms=platforms,
            )
        except (KeyError, TypeError, ValueError) as exc:
            # Exit 16 (release failed) like every other refusal of the state: it is the
            # release's own record, written only by its steps, and a script branching on a
            # release step's code must not see 3 for this one way its state is broken.
            raise ReleaseError(
                f"the release state {path} is malformed: {exc}",
                hint=f"remove it and start again with '{_command('build')}'",
            ) from None
        return state

    def save(self, target: Path) -> None:
        body = {
            "format": FORMAT,
            "version": self.version,
            "repository": self.repository,
            "manifest_digest": self.manifest_digest,
            "config_digest": self.config_digest,
            "steps": {name: dict(self.steps[name]) for name in STEPS if name in self.steps},
        }
        if self.platforms:
            body["platforms"] = {name: dict(digests) for name, digests in self.platforms.items()}
        durable.write(self.path(target), (json.dumps(body, indent=2, sort_keys=True) + "\n").encode())

    def passed(self, step: str) -> Mapping[str, Any] | None:
        return self.steps.get(step)

    def require(self, step: str) -> Mapping[str, Any]:
        """The record of ``step``, which must have passed for this digest."""
        record = self.steps.get(step)
        if record is None:
            raise ReleaseError(
                f"step '{step}' has not passed for {self.manifest_digest}",
                hint=f"run '{_command(step)}' first",
            )
        return record

    def record(self, step: str, outcome: Mapping[str, Any]) -> ReleaseState:
        """This state with ``step`` passed and every later step forgotten."""
        later = STEPS[STEPS.index(step) + 1 :]
        kept = {name: value for name, value in self.steps.items() if name not in later and name != step}
        return replace(self, steps={**kept, step: dict(outcome)})

    def for_image(
        self, manifest_digest: str, config_digest: str, platforms: Mapping[str, Mapping[str, str]] | None = None
    ) -> ReleaseState:
        """This state if it describes that image (or index); else a fresh one (a rebuild that changed it)."""
        platforms = dict(platforms or {})
        if (
            manifest_digest == self.manifest_digest
            and config_digest == self.config_digest
            and platforms == {k: dict(v) for k, v in self.platforms.items()}
        ):
            return self
        return replace(
            self, manifest_digest=manifest_digest, config_digest=config_digest, steps={}, platforms=platforms
        )

    def check_image(self, manifest_digest: str) -> None:
        if manifest_digest != self.manifest_digest:
            raise ReleaseError(
                f"the release state is for {self.manifest_digest}, the image here is {manifest_digest}",
                hint=f"run '{_command('build')}' again for this image",
            )


def _platforms(value: object) -> dict[str, dict[str, str]]:
    """The state's ``platforms``: each ``os/arch`` to a non-empty manifest and config digest."""
    if not isinstance(value, dict):
        raise ValueError("'platforms' must be an object")
    out: dict[str, dict[str, str]] = {}
    for name, digests in value.items():
        if not isinstance(name, str) or name.count("/") != 1 or not isinstance(digests, dict):
            raise ValueError(f"'platforms' names {name!r}, not os/arch with its digests")
        out[name] = {key: _text(digests, key) for key in ("manifest_digest", "config_digest")}
    return out


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise ValueError(f"'{key}' must be a non-empty string")
    return value
