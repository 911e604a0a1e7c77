"""Admission follows the trust policy's mirrors: the verified repository, and mirrors only when named."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from terminai_sandbox.signing.verify.trust import Mirror, VerificationPolicy

from tests.fixtures import kube_schemas
from tests.unit.kube.support import DIGEST, REFERENCE, by_kind, emitted, key_policy

UPSTREAM = "ghcr.io/terminai/sandbox"
PIN = "@" + DIGEST


def _globs(objects: list[dict[str, Any]]) -> list[str]:
    return [item["glob"] for item in by_kind(objects)["ClusterImagePolicy"]["spec"]["images"]]


def _kyverno_regex(objects: list[dict[str, Any]]) -> re.Pattern[str]:
    rule = by_kind(objects)["ClusterPolicy"]["spec"]["rules"][1]
    assert rule["name"] == "from-the-verified-repository-or-a-named-mirror"
    [condition] = rule["validate"]["foreach"][0]["deny"]["conditions"]["any"]
    assert (condition["operator"], condition["value"]) == ("Equals", False)
    found = re.fullmatch(r"\{\{ regex_match\('(.*)', '\{\{element\.image\}\}'\) \}\}", condition["key"])
    assert found, condition["key"]
    return re.compile(found.group(1))


def _mirrored(tmp_path: Path, *patterns: str) -> VerificationPolicy:
    policy = key_policy(tmp_path)[0]
    return VerificationPolicy(keys=policy.keys, mirrors=(Mirror(identity=UPSTREAM, repositories=patterns),))


def test_without_mirrors_only_the_verified_repository_is_admitted(tmp_path: Path) -> None:
    objects = emitted(key_policy(tmp_path)[0])
    assert _globs(objects) == [f"{REFERENCE}@*", f"{REFERENCE}:*"]
    admitted = _kyverno_regex(objects)
    assert admitted.search(REFERENCE + PIN) and admitted.search(f"{REFERENCE}:v1{PIN}")
    for refused in (f"{REFERENCE}-x{PIN}", f"{REFERENCE}/x{PIN}", f"evil.example/{REFERENCE}{PIN}", REFERENCE + ":v1"):
        assert not admitted.search(refused), refused


def test_a_mirror_of_the_verified_repository_is_admitted_with_its_patterns(tmp_path: Path) -> None:
    policy = _mirrored(tmp_path, "registry.example:5000/terminai/sandbox", "corp.example/*/sandbox")
    objects = emitted(policy, reference="corp.example/team/sandbox")  # the verified image is a mirror copy
    assert _globs(objects) == [
        f"{name}{suffix}"
        for name in (
            "corp.example/team/sandbox",
            UPSTREAM,
            "registry.example:5000/terminai/sandbox",
            "corp.example/*/sandbox",
        )
        for suffix in ("@*", ":*")
    ]
    admitted = _kyverno_regex(objects)
    for image in ("corp.example/team/sandbox", "corp.example/other/sandbox", UPSTREAM, REFERENCE):
        assert admitted.search(image + PIN), image
    for image in ("corp.example/a/b/sandbox", "corp.example/team/sandbox2", "ghcr.io/terminai/other"):
        assert not admitted.search(image + PIN), image
    assert "corp.example/*/sandbox" in by_kind(objects)["ClusterPolicy"]["spec"]["rules"][1]["validate"]["message"]
    for obj in objects:
        assert kube_schemas.errors(obj) == [], obj["kind"]


def test_mirror_entries_for_other_repositories_are_left_out(tmp_path: Path) -> None:
    policy = _mirrored(tmp_path, "corp.example/team/sandbox")
    objects = emitted(policy)  # REFERENCE is neither the upstream nor its mirror
    assert _globs(objects) == [f"{REFERENCE}@*", f"{REFERENCE}:*"]
    assert not _kyverno_regex(objects).search(UPSTREAM + PIN)
