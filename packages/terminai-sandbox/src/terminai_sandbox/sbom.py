"""CycloneDX 1.6 SBOM of an assembled image, read from its OCI layout (never from the host).

Inputs are the image's own files, taken from the layer tars in order (later layers and
whiteouts win): ``var/lib/dpkg/status`` for Debian packages, every ``*.dist-info/METADATA``
for Python distributions, ``usr/share/doc/<package>/copyright`` for Debian licences
(following a ``usr/share/doc/<package>`` symlink to the package that holds the file), and
``os-release`` for the purls' ``distro``. The locks in ``images/sandbox/`` add the sha256 of
each ``.deb`` and each wheel (:class:`~terminai_sandbox.artifacts.image_locks.ImageLocks`).
The layout is an opened :class:`~terminai_sandbox.artifacts.oci_layout.OciLayout`; its layer
blobs are checked against their digests before anything is read from them.

Licences are SPDX expressions (:mod:`terminai_sandbox.licenses`): every ``License:`` name of
a machine-readable (DEP-5) copyright file, or, for an older free-text file, every
``/usr/share/common-licenses/NAME`` it points to. A package's licence is all of them joined
with ``AND`` (its files carry each); the Debian names are kept in the
``terminai:deb:licenses`` property.

Deterministic: the timestamp is the image's ``created`` time (SOURCE_DATE_EPOCH of the
build), the serial number is derived from the manifest digest, ``bom-ref``s are purls, and
components are sorted by purl, so the same image gives byte-identical output. The document
is checked with the strict JSON schema validator before it is returned.
"""

from __future__ import annotations

import email.parser
import gzip
import posixpath
import re
import tarfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath

from cyclonedx.model import HashAlgorithm, HashType, Property
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.license import DisjunctiveLicense, LicenseExpression
from cyclonedx.output import make_outputter
from cyclonedx.schema import OutputFormat, SchemaVersion
from debian.deb822 import Deb822
from packageurl import PackageURL

from terminai_sandbox import licenses
from terminai_sandbox._version import __version__
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.artifacts.wheel_lock import normalise_pypi
from terminai_sandbox.errors import SbomError

__all__ = ["SbomOptions", "generate", "image_contents", "image_created", "normalise_pypi", "read_files"]

DEB_DISTRO = "debian-12"  # when the image carries no os-release
_PY_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_DEP_NAME = re.compile(r"^\s*([a-z0-9][a-z0-9+.-]+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class DebPackage:
    name: str
    version: str
    architecture: str
    source: str
    depends: tuple[str, ...]
    licenses: tuple[str, ...] = ()  # the names the copyright file gives, as Debian spells them
    license: str | None = None  # SPDX expression


@dataclass(frozen=True, slots=True, kw_only=True)
class PyDist:
    name: str
    version: str
    license: str | None  # SPDX expression
    requires: tuple[str, ...]


@dataclass(slots=True, kw_only=True)
class ImageContents:
    """What the image's own files say is installed."""

    debs: dict[str, DebPackage] = field(default_factory=dict)
    python: dict[str, PyDist] = field(default_factory=dict)
    distro: str = DEB_DISTRO


def image_created(layout: OciLayout) -> int:
    """The image config's ``created`` time (the build's SOURCE_DATE_EPOCH) in seconds."""
    try:
        created = layout.image_config()["created"]
        return int(datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp())
    except (ValueError, KeyError, TypeError, AttributeError):
        raise SbomError(
            f"{layout.root}: the image config has no readable 'created' time for the SBOM timestamp",
            hint="pass --source-date-epoch SECONDS",
        ) from None


_OS_RELEASE = ("etc/os-release", "usr/lib/os-release")


def _interesting(path: str) -> bool:
    return (
        path == "var/lib/dpkg/status"
        or path in _OS_RELEASE
        or (path.endswith(".dist-info/METADATA") and path.count("/") >= 2)
        or (path.startswith("usr/share/doc/") and path.endswith("/copyright") and path.count("/") == 4)
    )


def _doc_link(path: str) -> bool:
    # Debian points usr/share/doc/<binary> at the doc directory of the package holding the
    # copyright file (libstdc++6 -> gcc-12-base); os-release is a symlink too.
    return (path.startswith("usr/share/doc/") and path.count("/") == 3) or path in _OS_RELEASE


def read_files(layout: OciLayout) -> dict[str, bytes]:
    """The final content of the files the SBOM needs, after applying every layer in order.

    Symlinks among them are returned as ``b"->TARGET"`` under their own path.
    """
    files: dict[str, bytes] = {}
    for blob in layout.layer_paths():
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
                elif member.issym() and _doc_link(text):
                    files[text] = b"->" + member.linkname.encode()
    return files


def _resolve(files: dict[str, bytes], path: str) -> bytes | None:
    """A file's content, following symlinks (relative or absolute) a few levels deep."""
    for _ in range(5):
        data = files.get(path)
        if data is None or not data.startswith(b"->"):
            return data
        target = data[2:].decode()
        joined = target if target.startswith("/") else posixpath.join(posixpath.dirname(path), target)
        path = posixpath.normpath("/" + joined).lstrip("/")
    return None


def copyright_licenses(text: str) -> tuple[tuple[str, ...], str | None]:
    """(Debian licence names, SPDX expression) of one ``copyright`` file.

    A machine-readable (DEP-5) file names each licence on its ``License:`` lines. An older
    free-text file names none reliably; the licence texts it points to under
    ``/usr/share/common-licenses/`` are what it declares.
    """
    if text.startswith("Format:"):
        names = sorted({line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("License:")})
        names = [name for name in names if name]
        return tuple(names), licenses.conjunction(
            expression for expression in map(licenses.dep5_expression, names) if expression
        )
    referenced = licenses.common_license_names(text)
    return referenced, licenses.conjunction(licenses.dep5_name(name) for name in referenced)


def os_release_distro(text: str) -> str:
    """``<ID>-<VERSION_ID>`` from os-release, as syft writes the deb purl's ``distro``."""
    fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    ident = fields.get("ID", "").strip().strip('"')
    version = fields.get("VERSION_ID", "").strip().strip('"')
    return f"{ident}-{version}" if ident and version else DEB_DISTRO


def parse_dpkg_status(text: str, copyrights: dict[str, str] | None = None) -> dict[str, DebPackage]:
    """Installed packages from a dpkg status file (stanzas whose Status ends 'installed')."""
    out: dict[str, DebPackage] = {}
    for paragraph in Deb822.iter_paragraphs(text.splitlines(keepends=True), use_apt_pkg=False):
        fields = {key: value.strip() for key, value in paragraph.items()}
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
        names, expression = copyright_licenses((copyrights or {}).get(name, ""))
        out[name] = DebPackage(
            name=name,
            version=fields.get("Version", ""),
            architecture=fields.get("Architecture", ""),
            source=source,
            depends=tuple(sorted(set(deps))),
            licenses=names,
            license=expression,
        )
    return out


def parse_metadata(data: bytes) -> PyDist:
    """A Python distribution from its core metadata (``METADATA``)."""
    message = email.parser.BytesParser().parsebytes(data, headersonly=True)
    classifiers = [c.split("::")[-1].strip() for c in message.get_all("Classifier", []) if c.startswith("License")]
    license_text = licenses.python_expression(
        message.get("License-Expression") or None, message.get("License") or None, classifiers
    )
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


def image_contents(layout: OciLayout) -> ImageContents:
    files = read_files(layout)
    copyrights: dict[str, str] = {}
    for path in files:
        if path.startswith("usr/share/doc/"):
            package = path.split("/")[3]
            data = _resolve(files, f"usr/share/doc/{package}/copyright")
            if data is None and path.count("/") == 3:  # the doc directory itself is a symlink
                target = files[path][2:].decode()
                data = _resolve(files, f"usr/share/doc/{PurePosixPath(target).name}/copyright")
            if data is not None:
                copyrights[package] = data.decode("utf-8", "replace")
    contents = ImageContents()
    for name in _OS_RELEASE:
        release = _resolve(files, name)
        if release is not None:
            contents.distro = os_release_distro(release.decode("utf-8", "replace"))
            break
    status = files.get("var/lib/dpkg/status")
    if status is not None:
        contents.debs = parse_dpkg_status(status.decode("utf-8", "replace"), copyrights)
    for path, data in sorted(files.items()):
        if path.endswith(".dist-info/METADATA"):
            dist = parse_metadata(data)
            if dist.name:
                contents.python[normalise_pypi(dist.name)] = dist
    return contents


def _license(expression: str | None) -> list[DisjunctiveLicense | LicenseExpression]:
    """CycloneDX ``license.id`` for one SPDX identifier, ``expression`` for anything else."""
    if expression is None:
        return []
    if licenses.is_single_id(expression):
        return [DisjunctiveLicense(id=expression)]
    return [LicenseExpression(expression)]


def _deb_component(pkg: DebPackage, locks: ImageLocks, distro: str) -> Component:
    purl = PackageURL(
        type="deb",
        namespace="debian",
        name=pkg.name,
        version=pkg.version,
        qualifiers={"arch": pkg.architecture, "distro": distro},
    )
    sha = locks.deb_sha256.get((pkg.name, pkg.version, pkg.architecture))
    return Component(
        name=pkg.name,
        version=pkg.version,
        type=ComponentType.LIBRARY,
        purl=purl,
        bom_ref=purl.to_string(),
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=sha)] if sha else [],
        licenses=_license(pkg.license),
        properties=[
            Property(name="terminai:deb:source", value=pkg.source),
            Property(name="terminai:deb:architecture", value=pkg.architecture),
            *([Property(name="terminai:deb:licenses", value="; ".join(pkg.licenses))] if pkg.licenses else []),
        ],
    )


def _py_component(dist: PyDist, locks: ImageLocks) -> Component:
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
        licenses=_license(dist.license),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SbomOptions:
    layout: OciLayout
    repository: str
    version: str
    locks: ImageLocks  # the locks the image was built from: each component's sha256
    source_date_epoch: int | None = None  # None: the image config's created time


def generate(options: SbomOptions) -> str:
    """The validated CycloneDX 1.6 JSON document for the image in ``options.layout``."""
    digest = options.layout.manifest_digest
    options.layout.verify()
    contents = image_contents(options.layout)
    if not contents.debs:
        raise SbomError(f"{options.layout.root}: no dpkg status in the image; cannot list its Debian packages")
    locks = options.locks
    bom = Bom()
    bom.serial_number = uuid.uuid5(uuid.NAMESPACE_URL, f"terminai-sandbox-sbom:{digest}")
    epoch = options.source_date_epoch if options.source_date_epoch is not None else image_created(options.layout)
    bom.metadata.timestamp = datetime.fromtimestamp(epoch, tz=UTC)
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
    by_deb = {name: _deb_component(pkg, locks, contents.distro) for name, pkg in contents.debs.items()}
    by_py = {name: _py_component(dist, locks) for name, dist in contents.python.items()}
    for component in [*by_deb.values(), *by_py.values()]:
        bom.components.add(component)
    for name, pkg in contents.debs.items():
        bom.register_dependency(by_deb[name], [by_deb[d] for d in pkg.depends if d in by_deb])
    for name, dist in contents.python.items():
        bom.register_dependency(by_py[name], [by_py[r] for r in dist.requires if r in by_py])
    bom.register_dependency(root, [*by_deb.values(), *by_py.values()])
    text = make_outputter(bom, OutputFormat.JSON, SchemaVersion.V1_6).output_as_string(indent=1)
    # Loaded here, not with the module: jsonschema's format checkers compile a URI grammar on
    # import (~2.5 s of CPU), which every command that imports the release steps paid.
    from cyclonedx.validation.json import JsonStrictValidator  # noqa: PLC0415

    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    if errors is not None:
        raise SbomError(f"the generated SBOM does not validate against CycloneDX 1.6: {errors}")
    return text + "\n"
