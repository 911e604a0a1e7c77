"""Debian's cosign binaries, as ``scripts/ensure-host-tools`` places them, driven from tests.

The three signing flavours the matrix runs (offline: no Fulcio, no Rekor, keys only):

* ``cosign2``: trixie's cosign 2.x, legacy ``.sig``/``.att`` tags (its default).
* ``cosign3``: forky's cosign 3.x default, Sigstore bundles as OCI 1.1 referrers (on a
  registry without the referrers API: the fallback index at tag ``sha256-<hex>``).
  ``--use-signing-config=false --tlog-upload=false`` only turns the transparency log off;
  the format stays the default.
* ``cosign3-legacy``: cosign 3.x with ``--new-bundle-format=false``: the 2.x tags.

Verification offline always needs ``--insecure-ignore-tlog=true``: nothing was logged.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

TOOLS = Path(os.environ.get("TERMINAI_HOST_TOOLS", "/opt/terminai-host-tools"))
OFFLINE_VERIFY = ("--insecure-ignore-tlog=true",)


@dataclass(frozen=True, slots=True)
class Cosign:
    name: str
    major: int
    sign_flags: tuple[str, ...]
    home: Path

    @property
    def binary(self) -> Path:
        return TOOLS / f"cosign-{self.major}" / "bin" / "cosign"

    def run(self, *args: str, cwd: Path, password: str = "pw") -> subprocess.CompletedProcess[str]:
        if not self.binary.exists():
            pytest.fail(f"{self.binary} is missing: run 'sudo scripts/ensure-host-tools' (cosign {self.major}.x)")
        env = {"PATH": os.environ["PATH"], "HOME": str(self.home), "COSIGN_PASSWORD": password}
        return subprocess.run(
            [str(self.binary), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
        )

    def sign(self, ref: str, key: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return self.run("sign", "--key", key, "--yes", *self.sign_flags, ref, cwd=cwd)

    def attest(self, ref: str, key: str, kind: str, predicate: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
        return self.run(
            "attest",
            "--key",
            key,
            "--yes",
            "--type",
            kind,
            "--predicate",
            str(predicate),
            *self.sign_flags,
            ref,
            cwd=cwd,
        )

    def verify(self, ref: str, pub: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return self.run("verify", "--key", pub, *OFFLINE_VERIFY, ref, cwd=cwd)

    def verify_attestation(self, ref: str, pub: str, kind: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return self.run("verify-attestation", "--key", pub, "--type", kind, *OFFLINE_VERIFY, ref, cwd=cwd)


OFFLINE_V3 = ("--use-signing-config=false", "--tlog-upload=false")
FLAVOURS = {
    "cosign2": (2, ("--tlog-upload=false",)),
    "cosign3": (3, OFFLINE_V3),
    "cosign3-legacy": (3, (*OFFLINE_V3, "--new-bundle-format=false")),
}


def cosign(flavour: str, home: Path) -> Cosign:
    major, flags = FLAVOURS[flavour]
    home.mkdir(parents=True, exist_ok=True)
    return Cosign(flavour, major, flags, home)
