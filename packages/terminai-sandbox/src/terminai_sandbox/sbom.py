"""CycloneDX 1.6 SBOM of an assembled image, read from its OCI layout (never from the host).

Inputs are the image's own files, taken from the layer tars in order (later layers and
whiteouts win): ``var/lib/dpkg/status`` for Debian packages, every ``*.dist-info/METADATA``
for Python distributions, DEP-5 ``usr/share/doc/*/copyright`` for Debian licenses. The locks
in ``images/sandbox/`` add the sha256 of each ``.deb`` and each wheel.

Deterministic: the timestamp is SOURCE_DATE_EPOCH, the serial number is derived from the
manifest digest, ``bom-ref``s are purls, and components are sorted by purl, so the same
image gives byte-identical output. The document is checked with the strict JSON schema
validator before it is returned.
"""

from __future__ import annotations

import email.parser
import gzip
import json
import re
import tarfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from cyclonedx.model import HashAlgorithm, HashType, Property
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.license import DisjunctiveLicense, LicenseExpression
from cyclonedx.output import make_outputter
from cyclonedx.schema import OutputFormat, SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from packageurl import PackageURL

from terminai_sandbox._version import __version__
from terminai_sandbox.errors import SbomError

DEB_DISTRO = "debian-12"
_PY_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_DEP_NAME = re.compile(r"^\s*([a-z0-9][a-z0-9+.-]+)")


def normalise_pypi(name: str) -> str:
    """PEP 503 name, as ``pkg:pypi`` purls use it."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class DebPackage:
    name: str
    version: str
    architecture: str
    source: str
    depends: tuple[str, ...]
    licenses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PyDist:
    name: str
    version: str
    license: str | None
    requires: tuple[str, ...]


@dataclass(slots=True, kw_only=True)
class ImageContents:
    """What the image's own files say is installed."""

    debs: dict[str, DebPackage] = field(default_factory=dict)
    python: dict[str, PyDist] = field(default_factory=dict)


def _layer_paths(layout: Path) -> tuple[str, list[Path]]:
    try:
        index = json.loads((layout / "index.json").read_text())
        digest = index["manifests"][0]["digest"]
        manifest = json.loads((layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).read_text())
        layers = [layout / "blobs" / "sha256" / item["digest"].removeprefix("sha256:") for item in manifest["layers"]]
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise SbomError(f"{layout} is not a readable OCI image layout: {exc}") from None
    return digest, layers


def _interesting(path: str) -> bool:
    return (
        path == "var/lib/dpkg/status"
        or (path.endswith(".dist-info/METADATA") and path.count("/") >= 2)
        or (path.startswith("usr/share/doc/") and path.endswith("/copyright") and path.count("/") == 4)
    )


def read_files(layout: Path) -> dict[str, bytes]:
    """The final content of the files the SBOM needs, after applying every layer in order."""
    _, layers = _layer_paths(layout)
    files: dict[str, bytes] = {}
    for blob in layers:
        with gzip.open(blob) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                path = PurePosixPath(member.name.removeprefix("./"))
                name = path.name
                if name == ".wh..wh..opq":  # opaque directory: drop everything below it
                    prefix = f"{path.parent}/"
                    for key in [k for k in files if k.startswith(prefix)]:
                        del files[key]
                    continue
                if name.startswith(".wh."):
                    gone = str(path.parent / name.removeprefix(".wh."))
                    for key in [k for k in files if k == gone or k.startswith(gone + "/")]:
                        del files[key]
                    continue
                text = str(path)
                if member.isfile() and _interesting(text):
                    handle = tar.extractfile(member)
                    if handle is not None:
                        files[text] = handle.read()
    return files


def _dep5_licenses(text: str) -> tuple[str, ...]:
    if not text.startswith("Format:"):
        return ()  # only machine-readable (DEP-5) copyright files name licenses reliably
    found = {line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("License:")}
    return tuple(sorted(name for name in found if name))


def parse_dpkg_status(text: str, copyrights: dict[str, str] | None = None) -> dict[str, DebPackage]:
    """Installed packages from a dpkg status file (stanzas whose Status ends 'installed')."""
    out: dict[str, DebPackage] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        last = ""
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and last:
                fields[last] += "\n" + line
            elif ":" in line:
                last, _, value = line.partition(":")
                fields[last] = value.strip()
        if "Package" not in fields or not fields.get("Status", "").endswith(" installed"):
            continue
        deps: list[str] = []
        for key in ("Pre-Depends", "Depends"):
            for group in fields.get(key, "").split(","):
                for alternative in group.split("|"):
                    match = _DEP_NAME.match(alternative)
                    if match:
                        deps.append(match.group(1).split(":")[0])
        name = fields["Package"]
        source = fields.get("Source", name).split(" ")[0]
        out[name] = DebPackage(
            name=name,
            version=fields.get("Version", ""),
            architecture=fields.get("Architecture", ""),
            source=source,
            depends=tuple(sorted(set(deps))),
            licenses=_dep5_licenses((copyrights or {}).get(name, "")),
        )
    return out


def parse_metadata(data: bytes) -> PyDist:
    """A Python distribution from its core metadata (``METADATA``)."""
    message = email.parser.BytesParser().parsebytes(data, headersonly=True)
    license_text = message.get("License-Expression") or None
    if license_text is None:
        classifiers = [c.split("::")[-1].strip() for c in message.get_all("Classifier", []) if c.startswith("License")]
        plain = (message.get("License") or "").strip()
        license_text = classifiers[0] if classifiers else (plain if plain and "\n" not in plain else None)
    requires = []
    for item in message.get_all("Requires-Dist", []):
        if "extra ==" in item.replace(" ", " ") or "extra==" in item:
            continue  # optional extras are not installed dependencies
        match = _PY_NAME.match(item)
        if match:
            requires.append(normalise_pypi(match.group(1)))
    return PyDist(
        name=str(message.get("Name", "")),
        version=str(message.get("Version", "")),
        license=license_text,
        requires=tuple(sorted(set(requires))),
    )


def image_contents(layout: Path) -> ImageContents:
    files = read_files(layout)
    copyrights = {
        path.split("/")[3]: data.decode("utf-8", "replace")
        for path, data in files.items()
        if path.startswith("usr/share/doc/")
    }
    contents = ImageContents()
    status = files.get("var/lib/dpkg/status")
    if status is not None:
        contents.debs = parse_dpkg_status(status.decode("utf-8", "replace"), copyrights)
    for path, data in sorted(files.items()):
        if path.endswith(".dist-info/METADATA"):
            dist = parse_metadata(data)
            if dist.name:
                contents.python[normalise_pypi(dist.name)] = dist
    return contents


@dataclass(frozen=True, slots=True, kw_only=True)
class Locks:
    deb_sha256: dict[tuple[str, str, str], str]
    wheel_sha256: dict[tuple[str, str], tuple[str, ...]]


def read_locks(image_dir: Path) -> Locks:
    """sha256 of each .deb (``debian.lock``) and each wheel (``requirements.lock``)."""
    debs: dict[tuple[str, str, str], str] = {}
    wheels: dict[tuple[str, str], tuple[str, ...]] = {}
    deb_lock = image_dir / "debian.lock"
    if deb_lock.exists():
        for item in json.loads(deb_lock.read_text())["packages"]:
            debs[(item["name"], item["version"], item["architecture"])] = item["sha256"]
    req_lock = image_dir / "requirements.lock"
    if req_lock.exists():
        logical = req_lock.read_text().replace("\\\n", " ")
        for raw in logical.splitlines():
            line = raw.split("#", 1)[0].strip()
            if "==" not in line:
                continue
            spec = line.split()[0]
            name, _, version = spec.partition("==")
            hashes = tuple(re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
            wheels[(normalise_pypi(name.split("[")[0]), version)] = hashes
    return Locks(deb_sha256=debs, wheel_sha256=wheels)


def _license(text: str) -> DisjunctiveLicense | LicenseExpression:
    if any(op in f" {text} " for op in (" OR ", " AND ", " WITH ")):
        return LicenseExpression(text)
    return DisjunctiveLicense(name=text)


def _deb_component(pkg: DebPackage, locks: Locks) -> Component:
    purl = PackageURL(
        type="deb",
        namespace="debian",
        name=pkg.name,
        version=pkg.version,
        qualifiers={"arch": pkg.architecture, "distro": DEB_DISTRO},
    )
    sha = locks.deb_sha256.get((pkg.name, pkg.version, pkg.architecture))
    return Component(
        name=pkg.name,
        version=pkg.version,
        type=ComponentType.LIBRARY,
        purl=purl,
        bom_ref=purl.to_string(),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=sha)] if sha else [],
        licenses=[DisjunctiveLicense(name=name) for name in pkg.licenses],
        properties=[
            Property(name="terminai:deb:source", value=pkg.source),
            Property(name="terminai:deb:architecture", value=pkg.architecture),
        ],
    )


def _py_component(dist: PyDist, locks: Locks) -> Component:
    key = normalise_pypi(dist.name)
    purl = PackageURL(type="pypi", name=key, version=dist.version)
    hashes = locks.wheel_sha256.get((key, dist.version), ())
    type_ = ComponentType.APPLICATION if key == "terminai-apts" else ComponentType.LIBRARY
    return Component(
        name=key,
        version=dist.version,
        type=type_,
        purl=purl,
        bom_ref=purl.to_string(),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=h) for h in hashes],
        licenses=[_license(dist.license)] if dist.license else [],
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SbomOptions:
    layout: Path
    repository: str
    version: str
    source_date_epoch: int
    image_dir: Path


def generate(options: SbomOptions) -> str:
    """The validated CycloneDX 1.6 JSON document for the image in ``options.layout``."""
    digest, _ = _layer_paths(options.layout)
    contents = image_contents(options.layout)
    if not contents.debs:
        raise SbomError(f"{options.layout}: no dpkg status in the image; cannot list its Debian packages")
    locks = read_locks(options.image_dir)
    bom = Bom()
    bom.serial_number = uuid.uuid5(uuid.NAMESPACE_URL, f"terminai-sandbox-sbom:{digest}")
    bom.metadata.timestamp = datetime.fromtimestamp(options.source_date_epoch, tz=UTC)
    image_purl = PackageURL(
        type="oci",
        name=options.repository.rsplit("/", 1)[-1],
        version=digest,
        qualifiers={"repository_url": options.repository},
    )
    root = Component(
        name=options.repository,
        version=options.version,
        type=ComponentType.CONTAINER,
        purl=image_purl,
        bom_ref=image_purl.to_string(),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=digest.removeprefix("sha256:"))],
    )
    bom.metadata.component = root
    bom.metadata.tools.components.add(
        Component(name="terminai-sandbox", version=__version__, type=ComponentType.APPLICATION)
    )
    by_deb = {name: _deb_component(pkg, locks) for name, pkg in contents.debs.items()}
    by_py = {name: _py_component(dist, locks) for name, dist in contents.python.items()}
    for component in [*by_deb.values(), *by_py.values()]:
        bom.components.add(component)
    for name, pkg in contents.debs.items():
        bom.register_dependency(by_deb[name], [by_deb[d] for d in pkg.depends if d in by_deb])
    for name, dist in contents.python.items():
        bom.register_dependency(by_py[name], [by_py[r] for r in dist.requires if r in by_py])
    bom.register_dependency(root, [*by_deb.values(), *by_py.values()])
    text = make_outputter(bom, OutputFormat.JSON, SchemaVersion.V1_6).output_as_string(indent=1)
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    if errors is not None:
        raise SbomError(f"the generated SBOM does not validate against CycloneDX 1.6: {errors}")
    return text + "\n"
