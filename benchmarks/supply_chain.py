"""Supply-chain costs on the real image: SBOM generation, push, sign and verify.

Each figure is printed as a ratio against a baseline measured in the same run:
* SBOM generation vs. just decompressing and reading every layer tar (the unavoidable I/O);
* push of the OCI layout vs. a second push (all blobs skipped: pure API round trips);
* sign + verify through the registry vs. one raw ECDSA sign + verify in memory.

Usage: .venv/bin/python benchmarks/supply_chain.py [OCI_LAYOUT]   (default dist/0.1.0/oci)
Needs Debian's docker-registry binary (started on a free loopback port, storage in a temp dir).
"""

from __future__ import annotations

import gzip
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.artifacts.oci_layout import OciLayout
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.sbom import SbomOptions, generate
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.trust import TrustedKey, VerificationPolicy
from terminai_sandbox_dev.localregistry import loopback_registry

ROOT = Path(__file__).resolve().parents[1]


def best(action: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def read_layers(layout: OciLayout) -> None:
    for blob in layout.layer_paths():
        with gzip.open(blob) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                if member.isfile():
                    handle = tar.extractfile(member)
                    if handle is not None:
                        handle.read()


def main() -> None:
    layout = OciLayout.open(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist" / "0.1.0" / "oci")
    options = SbomOptions(
        layout=layout,
        repository="localhost/terminai/sandbox",
        version="0.1.0",
        source_date_epoch=0,
        locks=ImageLocks.read(ROOT / "images" / "sandbox"),
    )
    base = best(lambda: read_layers(layout))
    sbom = best(lambda: generate(options))
    print(f"sbom: {sbom:.2f} s vs reading the layers {base:.2f} s = {sbom / base:.2f}x")

    with tempfile.TemporaryDirectory() as tmp, loopback_registry(Path(tmp) / "registry") as registry:
        host = registry.host
        client = RegistryClient(host)
        start = time.perf_counter()
        digest = client.push_layout(layout, "bench/sandbox").digest
        first = time.perf_counter() - start
        again = best(lambda: client.push_layout(layout, "bench/sandbox"))
        print(f"push: first {first:.2f} s vs re-push (all blobs skipped) {again:.3f} s = {first / again:.0f}x")
        key = keys.generate()
        policy = VerificationPolicy(keys=(TrustedKey(pem=keys.public_pem(key), source="bench"),))
        ref = ImageRef.parse(f"{host}/bench/sandbox@{digest}")
        raw = best(
            lambda: key.public_key().verify(
                key.sign(b"x" * 250, ec.ECDSA(hashes.SHA256())), b"x" * 250, ec.ECDSA(hashes.SHA256())
            ),
            runs=20,
        )
        signing = best(lambda: sign.sign(client, "bench/sandbox", digest, key, docker_reference=ref.name))
        verifying = best(lambda: verify_image(ref, policy, client=client), runs=10)
        print(
            f"sign (registry read-modify-write): {signing * 1000:.1f} ms = {signing / raw:.0f}x raw ECDSA "
            f"sign+verify ({raw * 1000:.2f} ms)"
        )
        print(f"verify (resolve .sig, fetch, check): {verifying * 1000:.1f} ms = {verifying / raw:.0f}x raw")


if __name__ == "__main__":
    main()
