"""Deterministic image assembly: pinned Debian base, hashed wheels, T-APTS, OCI outputs.

The build is planned, then executed (cibuildwheel-shaped): :mod:`.inputs` gathers what
the checkout and the host provide, :func:`.plan.plan` turns it into frozen stages whose
cache keys derive from their declared inputs, :mod:`.execute` runs the stages against the
content-addressed :mod:`.cache`, :mod:`.record` checks the lock-only layers against
``layers.lock``, :mod:`.load` loads the image into the engine and :mod:`.reproduce` builds
a second time independently. The same inputs give the same layer diff_ids, config digest
and manifest digest: see :mod:`.layers` for the rules that make it so.
"""

from __future__ import annotations

from terminai_sandbox.artifacts.contract import LABEL as CONTRACT_LABEL
from terminai_sandbox.assemble.image import (
    BuildOptions,
    BuildResult,
    Progress,
    build_image,
    cached_base,
    lock_only_inputs,
    plan_for,
    result_from_dict,
)
from terminai_sandbox.assemble.inputs import repo_root
from terminai_sandbox.assemble.plan import ASSEMBLER_FORMAT, BuildPlan
from terminai_sandbox.assemble.reproduce import check_reproducible, copy_sources, independent_build
from terminai_sandbox.wheels import default_cache

__all__ = [
    "ASSEMBLER_FORMAT",
    "CONTRACT_LABEL",
    "BuildOptions",
    "BuildPlan",
    "BuildResult",
    "Progress",
    "build_image",
    "cached_base",
    "check_reproducible",
    "copy_sources",
    "default_cache",
    "independent_build",
    "lock_only_inputs",
    "plan_for",
    "repo_root",
    "result_from_dict",
]
