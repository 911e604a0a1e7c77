"""Deterministic layer tarballs.

Rules (each one fixes a measured source of non-determinism, see docs/ARCHITECTURE.md):
entries sorted by name, no ``./`` prefix and no root entry, modification times clamped
to SOURCE_DATE_EPOCH, PAX format with integer times, hardlinks re-targeted so that a link
always follows its target inside the same layer, xattrs kept, device nodes outside
``/dev`` and sockets refused (``/dev`` itself is provided by the runtime, so its nodes
are dropped). Our own layers additionally get normalised owners and modes. The layer's
identity is its diff_id (sha256 of the uncompressed tar); gzip blobs are derived from it
with a fixed header (mtime 0, no name) and level.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import stat
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from terminai_apts import durable

from terminai_sandbox.errors import BuildError

GZIP_LEVEL = 6
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    """One layer: the uncompressed tar and, once compressed, its gzip blob."""

    tar: Path
    diff_id: str
    size: int
    gzip: Path | None = None
    digest: str | None = None
    gzip_size: int | None = None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def _clean_name(name: str) -> str:
    name = name.lstrip("/")
    while name.startswith("./"):
        name = name[2:]
    return name.rstrip("/") if name not in (".", "") else ""


def normalise_tar(src: Path, dst: Path, *, source_date_epoch: int) -> Layer:
    """Rewrite a rootfs tarball (mmdebstrap output) deterministically into ``dst``."""
    with tarfile.open(src, "r:") as tar:
        members = []
        for member in tar.getmembers():
            name = _clean_name(member.name)
            if not name:
                continue
            if member.ischr() or member.isblk() or member.isfifo():
                if name.startswith("dev/"):
                    continue  # the container runtime provides /dev
                raise BuildError(f"device node or FIFO outside /dev in the base: {name}")
            if member.type not in (
                tarfile.REGTYPE,
                tarfile.AREGTYPE,
                tarfile.DIRTYPE,
                tarfile.SYMTYPE,
                tarfile.LNKTYPE,
            ):
                raise BuildError(f"unsupported tar entry type {member.type!r} for {name}")
            member.name = name
            if member.islnk():
                member.linkname = _clean_name(member.linkname)
            members.append(member)
        members.sort(key=lambda m: m.name)
        # Hardlink groups: the first name in sorted order carries the data.
        carrier: dict[str, str] = {}
        groups: dict[str, list[str]] = {}
        for member in members:
            if member.islnk():
                groups.setdefault(member.linkname, [member.linkname]).append(member.name)
        for names in groups.values():
            first = min(names)
            for name in names:
                carrier[name] = first
        by_name = {m.name: m for m in members}
        with dst.open("wb") as out, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as writer:
            for member in members:
                info = _copy_info(member, source_date_epoch)
                data_member = member
                if member.name in carrier:
                    first = carrier[member.name]
                    original = member.linkname if member.islnk() else member.name
                    data_member = by_name[original]
                    if member.name == first:
                        info = _copy_info(data_member, source_date_epoch)
                        info.name = member.name
                        info.type = tarfile.REGTYPE
                        info.linkname = ""
                    else:
                        info.type = tarfile.LNKTYPE
                        info.linkname = first
                        info.size = 0
                if info.type == tarfile.REGTYPE:
                    handle = tar.extractfile(data_member)
                    writer.addfile(info, handle)
                else:
                    info.size = 0
                    writer.addfile(info)
    return Layer(tar=dst, diff_id=sha256_file(dst), size=dst.stat().st_size)


def _copy_info(member: tarfile.TarInfo, sde: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(member.name)
    info.type = member.type
    info.mode = member.mode
    info.uid, info.gid = member.uid, member.gid
    info.uname, info.gname = member.uname, member.gname
    info.mtime = min(int(member.mtime), sde)
    info.size = member.size
    info.linkname = member.linkname
    # Keep extended attributes (file capabilities), drop times and other volatile records.
    info.pax_headers = {k: v for k, v in member.pax_headers.items() if k.startswith("SCHILY.xattr.")}
    return info


@dataclass(frozen=True, slots=True, kw_only=True)
class Owner:
    uid: int = 0
    gid: int = 0


def write_layer(
    staging: Path,
    dst: Path,
    *,
    source_date_epoch: int,
    owners: dict[str, Owner] | None = None,
    parents_from: Iterable[str] = (),
) -> Layer:
    """Pack ``staging`` (a tree rooted at ``/``) into a deterministic layer tar.

    Owners default to root; ``owners`` maps image paths (``home/sandbox``) to another
    owner. Files keep only their executable bit (0755 or 0644); directories are 0755.
    Symlinks are kept as links; device nodes and sockets are refused.
    """
    owners = owners or {}
    entries: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(staging):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = Path(dirpath) / name
            entries.append((str(full.relative_to(staging)), full))
    entries.sort(key=lambda e: e[0])
    seen_inodes: dict[tuple[int, int], str] = {}
    with dst.open("wb") as out, tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as writer:
        for name, full in entries:
            st = full.lstat()
            info = tarfile.TarInfo(name)
            owner = owners.get(name, Owner())
            info.uid, info.gid, info.uname, info.gname = owner.uid, owner.gid, "", ""
            info.mtime = source_date_epoch
            if stat.S_ISDIR(st.st_mode):
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                writer.addfile(info)
            elif stat.S_ISLNK(st.st_mode):
                info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, os.readlink(full)
                writer.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in seen_inodes:
                    info.type, info.linkname, info.mode = tarfile.LNKTYPE, seen_inodes[key], 0o644
                    writer.addfile(info)
                    continue
                seen_inodes[key] = name
                info.mode = 0o755 if st.st_mode & 0o111 else 0o644
                info.size = st.st_size
                with full.open("rb") as handle:
                    writer.addfile(info, handle)
            else:
                raise BuildError(f"refusing special file in a layer: {name}")
    return Layer(tar=dst, diff_id=sha256_file(dst), size=dst.stat().st_size)


def compress(layer: Layer, dst: Path) -> Layer:
    """gzip the layer deterministically (fixed header, level 6) and record the blob digest.

    ``dst`` appears complete or not at all: builds running at once share the cache's blobs, and
    one that found a half-written blob took the digest of its first bytes and linked it into its
    layout, which the other build's later bytes then corrupted.
    """
    tmp = durable.temp_path(dst)
    try:
        with (
            layer.tar.open("rb") as src,
            tmp.open("wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL) as gz,
        ):
            while chunk := src.read(_CHUNK):
                gz.write(chunk)
        durable.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Layer(
        tar=layer.tar,
        diff_id=layer.diff_id,
        size=layer.size,
        gzip=dst,
        digest=sha256_file(dst),
        gzip_size=dst.stat().st_size,
    )


def first_difference(a: Path, b: Path) -> str | None:
    """Name the first tar entry (and field) that differs between two layer tars, or None."""
    with tarfile.open(a, "r:") as ta, tarfile.open(b, "r:") as tb:
        ma, mb = ta.getmembers(), tb.getmembers()
        for left, right in zip(ma, mb, strict=False):
            if left.name != right.name:
                return f"entry order/name: {left.name!r} vs {right.name!r}"
            for field in ("type", "mode", "uid", "gid", "mtime", "size", "linkname", "pax_headers"):
                if getattr(left, field) != getattr(right, field):
                    return f"{left.name}: {field} {getattr(left, field)!r} vs {getattr(right, field)!r}"
            if left.isreg():
                fa, fb = ta.extractfile(left), tb.extractfile(right)
                assert fa is not None and fb is not None
                if fa.read() != fb.read():
                    return f"{left.name}: content differs"
        if len(ma) != len(mb):
            extra = (ma if len(ma) > len(mb) else mb)[min(len(ma), len(mb))]
            return f"entry count {len(ma)} vs {len(mb)} (first extra: {extra.name!r})"
    return None


def read_member(tar_path: Path, name: str) -> bytes | None:
    """The bytes of one regular file in a layer tar (None when absent)."""
    with tarfile.open(tar_path, "r:") as tar:
        try:
            member = tar.getmember(name)
        except KeyError:
            return None
        handle = tar.extractfile(member)
        return handle.read() if handle else None


__all__ = [
    "Layer",
    "Owner",
    "compress",
    "first_difference",
    "normalise_tar",
    "read_member",
    "sha256_file",
    "write_layer",
]
