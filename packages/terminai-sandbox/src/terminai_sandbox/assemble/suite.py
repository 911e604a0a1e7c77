"""The contract suite's test layer: pinned test wheels and the suite, assembled like the image's layers.

``contracts`` commits this layer on top of the image under test; it is built here, with
the same wheel checks and deterministic tar rules as the image, so the contract runner
needs nothing of the assembler but this function.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from terminai_sandbox.assemble import python
from terminai_sandbox.assemble.layers import write_layer

SUITE_DIR = "/opt/terminai/contracts"
SUITE_SITE = "/opt/terminai/contract-tools"


def contract_layer(suite: Path, test_lock: Path, wheelhouse: Path, work: Path) -> bytes:
    """The test layer's tar: ``test_lock``'s wheels (by sha256, from or into ``wheelhouse``) and ``suite``."""
    staging = work / "test-layer"
    wheels = python.locked_wheels(test_lock, wheelhouse)
    # A directory of its own (on PYTHONPATH when the suite runs), not the image's
    # site-packages: that path names the image's Python version.
    python.install(wheels, staging, site_packages=SUITE_SITE, scripts=f"{SUITE_SITE}/bin")
    target = staging / SUITE_DIR.lstrip("/")
    shutil.copytree(suite, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    layer = write_layer(staging, work / "test-layer.tar", source_date_epoch=0)
    return layer.tar.read_bytes()
