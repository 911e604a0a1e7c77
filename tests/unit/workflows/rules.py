"""This project's own rules for .github/workflows/*.yml, checked without GitHub or the network.

``make lint`` runs actionlint (is the workflow valid?) and zizmor (``.github/zizmor.yml``,
pedantic persona, offline), which enforces the general hardening: top-level
``permissions: {}`` (excessive-permissions), a reason beside every grant
(undocumented-permissions), no ``pull_request_target`` (dangerous-triggers), every
``uses:`` pinned to a full commit SHA (unpinned-uses) and every ``docker://`` image by
digest (unpinned-images), no ``${{ ... }}`` inside ``run:`` (template-injection), and
checkouts that do not leave the token behind (artipacked). ``test_zizmor.py`` proves each
of those on a sample. What zizmor does not check stays here:

* an explicit ``permissions`` mapping on every job (zizmor accepts inheriting ``{}``);
* ``id-token: write`` (the OIDC identity that keyless signing turns into a certificate)
  only on the jobs listed in ``OIDC_JOBS``;
* the release tag in a comment beside every SHA-pinned ``uses:`` (zizmor compares the
  two only online);
* ``persist-credentials: false`` spelled out on every checkout (zizmor's artipacked
  accepts an explicit ``true``);
* runners pinned to a version (``ubuntu-24.04``), never ``-latest``;
* every ``make TARGET`` a workflow runs exists in the Makefile.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

# workflow file name -> jobs allowed to request `id-token: write`
OIDC_JOBS: Mapping[str, frozenset[str]] = {"release.yml": frozenset({"sign"})}

_SHA_PIN = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")
_USES_LINE = re.compile(r"^\s*(?:-\s*)?uses:\s*(\S+)\s*(?:#\s*(\S+))?")
_TAG_COMMENT = re.compile(r"^v\d+(?:\.\d+)*$")
_MAKE = re.compile(r"(?:^|[\s;&|(])(?:sudo\s+(?:-\S+\s+)*)?make((?:\s+[^\s;&|)]+)*)")
_TARGET_LINE = re.compile(r"^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:(?!=)")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a YAML mapping")
    return data


def triggers(workflow: Mapping[Any, Any]) -> set[str]:
    # YAML 1.1 (PyYAML) reads the bare key `on` as the boolean True.
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return {str(item) for item in on}
    if isinstance(on, dict):
        return {str(key) for key in on}
    return set()


def _jobs(workflow: Mapping[Any, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, job in (workflow.get("jobs") or {}).items():
        yield str(name), job if isinstance(job, dict) else {}


def _steps(job: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for step in job.get("steps") or []:
        if isinstance(step, dict):
            yield step


def makefile_targets(makefile: Path) -> set[str]:
    targets: set[str] = set()
    for line in makefile.read_text().splitlines():
        if line.startswith(("\t", "#", " ")) or line.startswith("."):
            continue
        match = _TARGET_LINE.match(line)
        if match:
            targets.update(match.group(1).split())
    return targets


def make_targets_called(script: str) -> set[str]:
    """Targets of every ``make`` / ``sudo make`` in a shell script (options and VAR=x skipped)."""
    called: set[str] = set()
    for match in _MAKE.finditer(script):
        try:
            words = shlex.split(match.group(1))
        except ValueError:
            words = match.group(1).split()
        skip_next = False
        for word in words:
            if skip_next:
                skip_next = False
                continue
            if word in {"-C", "-f", "-j", "-o", "-W", "-I"}:
                skip_next = True
                continue
            if word.startswith("-") or "=" in word:
                continue
            called.add(word)
    return called


def check(name: str, text: str, targets: set[str]) -> list[str]:
    """Every rule violation in the workflow file ``name`` with contents ``text``."""
    workflow = yaml.safe_load(text)
    if not isinstance(workflow, dict):
        return [f"{name}: not a YAML mapping"]
    problems: list[str] = []
    allowed_oidc = OIDC_JOBS.get(name, frozenset())
    for job_name, job in _jobs(workflow):
        where = f"{name}: job {job_name}"
        perms = job.get("permissions")
        if not isinstance(perms, dict):
            problems.append(f"{where}: needs an explicit permissions mapping ({{}} for none)")
            perms = {}
        if perms.get("id-token") == "write" and job_name not in allowed_oidc:
            problems.append(f"{where}: id-token: write is reserved for the signing job")
        runs_on = str(job.get("runs-on", ""))
        if runs_on.endswith("-latest") or not runs_on:
            problems.append(f"{where}: runs-on must name a pinned runner image, not {runs_on!r}")
        for step in _steps(job):
            uses = step.get("uses")
            if isinstance(uses, str) and uses.split("@", 1)[0] == "actions/checkout":
                with_ = step.get("with") or {}
                if with_.get("persist-credentials") is not False:
                    problems.append(f"{where}: actions/checkout needs persist-credentials: false")
            run = step.get("run")
            if isinstance(run, str):
                for target in sorted(make_targets_called(run) - targets):
                    problems.append(f"{where}: make {target} is not a Makefile target")
    # The tag comment is only in the text (YAML drops comments).
    for number, line in enumerate(text.splitlines(), start=1):
        match = _USES_LINE.match(line)
        if match and _SHA_PIN.match(match.group(1)) and not (match.group(2) and _TAG_COMMENT.match(match.group(2))):
            problems.append(f"{name}:{number}: SHA-pinned uses: needs its release tag in a comment (# vX.Y.Z)")
    return problems
