"""The T-APTS contract: the version this launcher supports and the label an image carries it in.

One source: the contract manifest shipped with this package
(``terminai_sandbox/resources/contracts/t-apts/contract.json``, the repository's
``contracts/t-apts/contract.json``). The build writes its version into the image label
:data:`LABEL`; preflight compares that label with :meth:`Contract.shipped`.

Compatibility is semantic versioning: an image serves this launcher when the majors are
equal and the image's MAJOR.MINOR is at least the supported one (a patch never matters).

Stdlib only and no ``typing``/``dataclasses``: every session start imports this module.
"""

from __future__ import annotations

import json
from pathlib import Path

from terminai_sandbox import resources
from terminai_sandbox.errors import ArtifactError

#: The image label (and manifest annotation) that carries the contract version.
LABEL = "dev.terminai.contract.version"
_HINT = "restore contracts/t-apts/contract.json (a 'contract_version' of MAJOR.MINOR.PATCH), or reinstall"


def parse_version(text: object) -> tuple[int, int, int] | None:
    """``MAJOR.MINOR.PATCH`` as three integers, or None when ``text`` is not exactly that."""
    if not isinstance(text, str):
        return None
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isdigit() and p.isascii() for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def incompatibility(image_version: str | None, supported: str) -> str | None:
    """Why an image whose label says ``image_version`` cannot serve ``supported``, or None when it can."""
    if not image_version:
        return f"the image has no {LABEL} label"
    have = parse_version(image_version)
    if have is None:
        return f"the image's contract version {image_version!r} is malformed"
    want = parse_version(supported)
    if want is None:
        return f"this launcher's supported contract version {supported!r} is malformed"
    if have[0] != want[0]:
        return f"the image provides contract {image_version}, this launcher needs {supported} (major differs)"
    if have[:2] < want[:2]:
        return f"the image provides contract {image_version}, older than the required {supported}"
    return None


class Contract:
    """A contract manifest's name and version (immutable)."""

    __slots__ = ("name", "version")
    name: str
    version: str

    def __init__(self, name: str, version: str) -> None:
        if not name:
            raise ArtifactError("a contract needs a name", hint=_HINT)
        if parse_version(version) is None:
            raise ArtifactError(f"contract {name!r} has version {version!r}, not MAJOR.MINOR.PATCH", hint=_HINT)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "version", version)

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"a Contract is immutable (cannot set {key!r})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Contract) and (self.name, self.version) == (other.name, other.version)

    def __hash__(self) -> int:
        return hash((self.name, self.version))

    def __repr__(self) -> str:
        return f"Contract(name={self.name!r}, version={self.version!r})"

    @classmethod
    def load(cls, path: Path) -> Contract:
        """The contract a manifest file declares (``contract`` and ``contract_version``)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ArtifactError(f"no contract manifest at {path}", hint=_HINT) from None
        except OSError as exc:
            raise ArtifactError(f"cannot read the contract manifest {path}: {exc.strerror}", hint=_HINT) from None
        except ValueError as exc:
            raise ArtifactError(f"the contract manifest {path} is not valid JSON: {exc}", hint=_HINT) from None
        if not isinstance(data, dict):
            raise ArtifactError(f"the contract manifest {path} is not a JSON object", hint=_HINT)
        name, version = data.get("contract"), data.get("contract_version")
        if not isinstance(name, str) or not isinstance(version, str):
            raise ArtifactError(
                f"the contract manifest {path} needs 'contract' and 'contract_version' strings", hint=_HINT
            )
        try:
            return cls(name, version)
        except ArtifactError as exc:
            raise ArtifactError(f"{path}: {exc.message}", hint=exc.hint) from None

    @classmethod
    def shipped(cls) -> Contract:
        """The contract this installation supports: the manifest shipped as package data."""
        return cls.load(resources.contract_manifest())

    def incompatibility(self, image_version: str | None) -> str | None:
        """Why an image labelled ``image_version`` cannot serve this contract, or None when it can."""
        return incompatibility(image_version, self.version)

    def compatible(self, image_version: str | None) -> bool:
        """Whether an image labelled ``image_version`` serves this contract."""
        return self.incompatibility(image_version) is None


def supported_version() -> str:
    """The contract version this installation supports (:meth:`Contract.shipped`)."""
    return Contract.shipped().version
