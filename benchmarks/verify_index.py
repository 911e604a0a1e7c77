"""What the index rule costs: verifying a two-platform index against verifying one image.

Both releases are pushed and signed on the same loopback registry in the same run: one
single-manifest image (the baseline), and an index over two platform images, each signed.
Printed as ratios against the single image:

* the index and the one platform the launcher runs (``run``'s cost on a cold cache);
* the index and every platform (``verify``'s and ``kube``'s cost);
* air-gapped (``verify --offline``): a release directory of the index and both platforms
  against one of the single image, each exported from the same registry.

Usage: .venv/bin/python benchmarks/verify_index.py
Needs Debian's docker-registry binary (started on a free loopback port, storage in a temp dir).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout
from terminai_sandbox.common.reference import ImageRef
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox.signing.store import RegistryStore, export_offline
from terminai_sandbox.signing.verify.image import verify_image
from terminai_sandbox.signing.verify.platforms import Platform
from terminai_sandbox.signing.verify.trust import TrustedKey, VerificationPolicy
from terminai_sandbox_dev.localregistry import loopback_registry

RUNS = 30


def best(action: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def _config(arch: str) -> bytes:
    return json.dumps({"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}).encode()


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the layout writers of the tests
    from tests.fixtures.oci import write_index_layout, write_layout

    with tempfile.TemporaryDirectory() as tmp, loopback_registry(Path(tmp) / "registry") as registry:
        work = Path(tmp)
        client = RegistryClient(registry.host)
        key = keys.generate()
        policy = VerificationPolicy(keys=(TrustedKey(pem=keys.public_pem(key), source="bench"),))
        name = f"{registry.host}/bench/multi"

        write_layout(work / "single", config=_config("amd64"), layers=[b"single"])
        single = client.push_layout(OciLayout.open(work / "single"), "bench/multi").digest
        write_index_layout(work / "index", {f"linux/{a}": (_config(a), [a.encode()]) for a in ("amd64", "arm64")})
        layout = IndexLayout.open(work / "index")
        index = client.push_index_layout(layout, "bench/multi").digest
        for digest in (single, index, *(image.manifest_digest for image in layout.images)):
            sign.sign(client, "bench/multi", digest, key, docker_reference=name)

        one = ImageRef.parse(f"{name}@{single}")
        both = ImageRef.parse(f"{name}@{index}")
        host = Platform.parse("linux/amd64")
        base = best(lambda: verify_image(one, policy, client=client))
        run = best(lambda: verify_image(both, policy, client=client, platform=host))
        every = best(lambda: verify_image(both, policy, client=client))
        print(f"verify one image (baseline):           {base * 1000:.1f} ms")
        print(f"verify index + the host's platform:    {run * 1000:.1f} ms = {run / base:.2f}x")
        print(f"verify index + both platforms:         {every * 1000:.1f} ms = {every / base:.2f}x")

        # Air-gapped: each release directory holds its layout and every signature exported.
        store = RegistryStore(client, "bench/multi")
        for folder, digest, children in (
            ("single", single, ()),
            ("index", index, tuple(image.manifest_digest for image in layout.images)),
        ):
            shutil.copytree(work / folder, work / f"release-{folder}" / "oci")
            export_offline(store, digest, work / f"release-{folder}", children=children)
        offline_one = best(lambda: verify_image(one, policy, client=None, offline_dir=work / "release-single"))
        offline_all = best(lambda: verify_image(both, policy, client=None, offline_dir=work / "release-index"))
        print(f"offline: one image (baseline):         {offline_one * 1000:.1f} ms")
        print(f"offline: index + both platforms:       {offline_all * 1000:.1f} ms = {offline_all / offline_one:.2f}x")


if __name__ == "__main__":
    main()
