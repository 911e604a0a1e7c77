"""Debian side of the build: mmdebstrap runs, the package lock, drift checks.

The lock (``debian.lock``, JSON) records every installed package with exact version,
architecture, source package, size and the sha256 that the signed archive index gives
for that .deb. Builds pin every package to the lock with an apt-preferences file (one
``Pin: version`` stanza per package, priority 1001) and then prove that the installed
set equals the lock and that the archive's sha256 of each installed version equals the
locked one (apt itself verified each download against that signed index).
"""

from __future__ import annotations

import email.utils
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from debian.deb822 import Deb822
from debian.debian_support import Version

from terminai_sandbox.artifacts.debian_lock import DebianLock, DebianPackage
from terminai_sandbox.assemble.hooks import MMDEBSTRAP_SKIP
from terminai_sandbox.assemble.spec import ImageSpec
from terminai_sandbox.errors import BuildError, LockError

MERGED_USR_HOOKS = Path("/usr/share/mmdebstrap/hooks/merged-usr")


def paragraphs(text: str) -> Iterator[dict[str, str]]:
    """The paragraphs of deb822 text (dpkg status, Packages, a signed or plain Release), parsed
    by python-debian, as dicts of each field's first line (every field read here is one line)."""
    for paragraph in Deb822.iter_paragraphs(text.splitlines(keepends=True), use_apt_pkg=False):
        fields = {key: value.split("\n", 1)[0].strip() for key, value in paragraph.items()}
        if fields:
            yield fields


@dataclass(frozen=True, slots=True, kw_only=True)
class Collected:
    """What a hook copied out of a fresh rootfs: dpkg status, apt lists, Release dates."""

    status: str
    packages_files: tuple[Path, ...]
    release_dates: tuple[int, ...]


def installed(status: str) -> dict[str, dict[str, str]]:
    """Installed packages from dpkg status text, keyed by name."""
    out = {}
    for fields in paragraphs(status):
        if fields.get("Status", "").endswith(" installed"):
            out[fields["Package"]] = fields
    return out


def run_mmdebstrap(
    spec: ImageSpec,
    output: Path,
    *,
    workdir: Path,
    source_date_epoch: int | None,
    prefs: str | None,
    extra_hooks: tuple[str, ...] = (),
    log: Callable[[str], None] = lambda _m: None,
) -> Collected:
    """Create the rootfs tarball ``output``; return what the collecting hook saw."""
    if shutil.which("mmdebstrap") is None:
        raise BuildError("mmdebstrap is not installed", hint="run 'make host-tools' (apt-get install mmdebstrap)")
    collect = workdir / "collect"
    collect.mkdir(parents=True, exist_ok=True)
    # --dpkgopt also reaches the essential packages that mmdebstrap unpacks first, and
    # mmdebstrap keeps the options in /etc/dpkg/dpkg.cfg.d so later installs stay slim.
    dpkg_opts = [f"--dpkgopt=path-exclude={p}" for p in spec.path_exclude]
    dpkg_opts += [f"--dpkgopt=path-include={p}" for p in spec.path_include]
    cmd = [
        "mmdebstrap",
        f"--variant={spec.variant}",
        f"--architectures={spec.architecture}",
        f"--include={','.join(spec.packages)}",
        f"--hook-dir={MERGED_USR_HOOKS}",
        *(f"--skip={step}" for step in MMDEBSTRAP_SKIP),
        *dpkg_opts,
    ]
    if prefs is not None:
        pref_file = workdir / "terminai-lock.pref"
        pref_file.write_text(prefs)
        cmd.append(f'--setup-hook=mkdir -p "$1/etc/apt/preferences.d" && cp {pref_file} "$1/etc/apt/preferences.d/"')
    cmd.append(
        f'--customize-hook=cp "$1/var/lib/dpkg/status" {collect}/status && '
        f"mkdir -p {collect}/lists && "
        f'cp "$1"/var/lib/apt/lists/*_Packages "$1"/var/lib/apt/lists/*Release {collect}/lists/'
    )
    cmd += [f"--customize-hook={hook}" for hook in extra_hooks]
    cmd.append(
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/archives/*.deb '
        '"$1/etc/apt/preferences.d/terminai-lock.pref"'
    )
    cmd += [spec.suite, str(output), *spec.mirrors]
    env = {**os.environ, "LC_ALL": "C.UTF-8", "TZ": "UTC"}
    if source_date_epoch is not None:
        env["SOURCE_DATE_EPOCH"] = str(source_date_epoch)
    log(f"mmdebstrap {spec.suite} ({spec.variant}, {len(spec.packages)} requested packages)")
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-25:])
        raise BuildError(
            f"mmdebstrap failed (exit {proc.returncode}):\n{tail}",
            hint="a locked version may have left the mirror: run 'terminai-sandbox lock --check'",
        )
    log(f"mmdebstrap done in {time.monotonic() - started:.1f} s")
    lists = collect / "lists"
    dates = []
    for release in sorted(lists.glob("*Release")):
        for fields in paragraphs(release.read_text(errors="replace")):
            if "Date" in fields:
                dates.append(int(email.utils.parsedate_to_datetime(fields["Date"]).timestamp()))
                break
    return Collected(
        status=(collect / "status").read_text(),
        packages_files=tuple(sorted(lists.glob("*_Packages"))),
        release_dates=tuple(dates),
    )


_PACKAGE_LINE = re.compile(r"^Package:[ \t]*(\S+)[ \t]*$", re.MULTILINE)


def _candidate_blocks(text: str, names: set[str]) -> Iterator[str]:
    """The blank-line separated blocks of an archive index that name a package of ``names``.

    A trixie ``Packages`` file holds some 65,000 paragraphs and the image about a hundred:
    parsing every one with python-debian took 5 s of a cold build. A block whose
    ``Package:`` lines name none of ``names`` cannot hold a wanted record, so only the
    others reach the parser; a block is whatever lies between empty lines, and the parser
    still decides where its paragraphs are, so a block of several paragraphs is not lost.
    """
    for block in text.split("\n\n"):
        if any(match in names for match in _PACKAGE_LINE.findall(block)):
            yield block + "\n"


def _index_records(collected: Collected, wanted: dict[str, str]) -> dict[tuple[str, str], dict[str, str]]:
    """Archive index records for (name, version) pairs in ``wanted``."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    names = set(wanted)
    for path in collected.packages_files:
        for block in _candidate_blocks(path.read_text(errors="replace"), names):
            for fields in paragraphs(block):
                name = fields.get("Package", "")
                if wanted.get(name) == fields.get("Version"):
                    found[(name, fields["Version"])] = fields
    return found


def make_lock(spec: ImageSpec, collected: Collected) -> DebianLock:
    """The lock document for what a fresh, unpinned bootstrap installed."""
    pkgs = installed(collected.status)
    records = _index_records(collected, {n: f["Version"] for n, f in pkgs.items()})
    entries = []
    for name in sorted(pkgs):
        fields = pkgs[name]
        record = records.get((name, fields["Version"]))
        if record is None:
            raise LockError(
                f"{name} {fields['Version']} is installed but in no archive index",
                hint="the mirror changed during locking; run 'terminai-sandbox lock' again",
            )
        entries.append(
            DebianPackage(
                name=name,
                version=fields["Version"],
                architecture=fields.get("Architecture", spec.architecture),
                source=(fields.get("Source") or name).split(" ")[0],
                sha256=record["SHA256"],
                size=int(record["Size"]),
                filename=record["Filename"],
            )
        )
    lock = DebianLock(
        suite=spec.suite,
        architecture=spec.architecture,
        mirrors=tuple(spec.mirrors),
        # The newest archive Release date: a meaningful, reproducible SOURCE_DATE_EPOCH.
        source_date_epoch=max(collected.release_dates),
        packages=tuple(entries),
    )
    return DebianLock.from_dict(lock.to_dict(), where="the new Debian lock")  # what a later read accepts


def read_lock(path: Path) -> DebianLock:
    """The lock at ``path``, strictly parsed (see :class:`~terminai_sandbox.artifacts.debian_lock.DebianLock`)."""
    return DebianLock.load(path)


def write_lock(path: Path, lock: DebianLock) -> None:
    path.write_text(lock.dumps())


def preferences(lock: DebianLock) -> str:
    """apt preferences pinning every locked package to its exact version."""
    stanzas = [f"Package: {p.name}\nPin: version {p.version}\nPin-Priority: 1001\n" for p in lock.packages]
    return "\n".join(stanzas)


def verify_against_lock(lock: DebianLock, collected: Collected) -> None:
    """Installed set == lock (names, versions, architectures) and index sha256 == locked sha256."""
    pkgs = installed(collected.status)
    locked = lock.by_name()
    problems = []
    for name in sorted(set(pkgs) - set(locked)):
        problems.append(f"extra package {name} {pkgs[name]['Version']} (not in the lock)")
    for name in sorted(set(locked) - set(pkgs)):
        problems.append(f"missing package {name} {locked[name].version}")
    for name in sorted(set(pkgs) & set(locked)):
        got, want = pkgs[name], locked[name]
        if got["Version"] != want.version or got.get("Architecture") != want.architecture:
            problems.append(
                f"{name}: installed {got['Version']} ({got.get('Architecture')}), "
                f"locked {want.version} ({want.architecture})"
            )
    records = _index_records(collected, {n: f["Version"] for n, f in pkgs.items()})
    for name in sorted(set(pkgs) & set(locked)):
        record = records.get((name, pkgs[name]["Version"]))
        if record is not None and record.get("SHA256") != locked[name].sha256:
            problems.append(
                f"{name} {locked[name].version}: archive sha256 {record.get('SHA256')} "
                f"differs from the locked {locked[name].sha256}"
            )
    if problems:
        raise LockError(
            "the installed Debian packages do not match debian.lock:\n  " + "\n  ".join(problems),
            hint="run 'terminai-sandbox lock --check' to see drift; relock with 'terminai-sandbox lock'",
        )


def drift(spec: ImageSpec, lock: DebianLock) -> list[str]:
    """Locked versions gone from the mirrors, and newer candidates (apt-get update in a scratch dir)."""
    with tempfile.TemporaryDirectory(prefix="terminai-drift-") as tmp:
        root = Path(tmp)
        for sub in ("lists/partial", "cache/archives/partial", "etc/preferences.d", "etc/apt.conf.d"):
            (root / sub).mkdir(parents=True)
        (root / "sources.list").write_text("\n".join(spec.mirrors) + "\n")
        (root / "status").write_text("")
        opts = [
            f"-o=Dir::State::Lists={root}/lists",
            f"-o=Dir::Cache={root}/cache",
            f"-o=Dir::Etc::SourceList={root}/sources.list",
            "-o=Dir::Etc::SourceParts=/nonexistent",
            f"-o=Dir::State::status={root}/status",
            f"-o=APT::Architecture={spec.architecture}",
            "-o=APT::Architectures::=",
            f"-o=Dir::Etc::Parts={root}/etc/apt.conf.d",
            f"-o=Dir::Etc::PreferencesParts={root}/etc/preferences.d",
        ]
        proc = subprocess.run(["apt-get", *opts, "update"], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise LockError(f"apt-get update failed while checking drift: {proc.stderr.strip()[-500:]}")
        versions: dict[str, set[str]] = {}
        for path in sorted((root / "lists").glob("*_Packages*")):
            # apt may keep indexes compressed (lz4, gz, xz); apt-helper reads every format.
            text = subprocess.run(
                ["/usr/lib/apt/apt-helper", "cat-file", str(path)],
                capture_output=True,
                text=True,
                errors="replace",
                check=True,
            ).stdout
            for fields in paragraphs(text):
                versions.setdefault(fields.get("Package", ""), set()).add(fields.get("Version", ""))
    return drift_report(lock.packages, versions)


def drift_report(locked: Iterable[DebianPackage], available: dict[str, set[str]]) -> list[str]:
    """Locked versions missing from ``available`` (name -> versions), and newer candidates."""
    report = []
    for pkg in locked:
        versions = available.get(pkg.name, set())
        if pkg.version not in versions:
            report.append(f"gone: {pkg.name} {pkg.version} is no longer on the mirrors")
        candidate = newest(versions)
        if candidate is not None and is_newer(candidate, pkg.version):
            report.append(f"newer: {pkg.name} {pkg.version} -> {candidate}")
    return report


def is_newer(candidate: str, current: str) -> bool:
    """Debian policy ordering (epochs, ``~``, numeric runs), never string order: 1.10 > 1.9."""
    return bool(Version(candidate) > Version(current))


def newest(versions: Iterable[str]) -> str | None:
    """The highest Debian version of ``versions`` (None when empty)."""
    ordered = sorted(versions, key=Version)
    return ordered[-1] if ordered else None
