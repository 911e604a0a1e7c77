"""The release workflow publishes the index of every platform image.toml declares.

Only ``release build`` names the platforms; the release state carries them (the index's
digest and each platform's) to every later job, whose step then works on each platform
the state lists: every contract suite, every SBOM and provenance, every platform pushed,
signed, attested and verified, and the tag on the index. These tests pin the workflow's
side of that: the list it builds is image.toml's, no later step can narrow it, the build
job can run the arm64 image, and what the release page attaches is per platform.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.cli.release_cmd import release_cmd
from terminai_sandbox.release.state import STEPS

from tests.unit.workflows import rules

ROOT = Path(__file__).resolve().parents[3]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
DECLARED = tuple(tomllib.loads((ROOT / "images" / "sandbox" / "image.toml").read_text())["image"]["platforms"])


def _jobs() -> dict[str, Any]:
    jobs: dict[str, Any] = rules.load(RELEASE)["jobs"]
    return jobs


def _release_commands() -> Iterator[tuple[str, str, list[str]]]:
    """(job, step, arguments) of every ``terminai-sandbox release STEP`` the workflow runs."""
    for job_name, job in _jobs().items():
        for step in job["steps"]:
            for line in (step.get("run") or "").replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                for n, word in enumerate(words[:-1]):
                    if word.endswith("terminai-sandbox") and words[n + 1] == "release":
                        yield job_name, words[n + 2], words[n + 3 :]


def test_the_build_job_builds_the_index_of_exactly_the_declared_platforms() -> None:
    assert len(DECLARED) >= 2  # an index, not one image: what this workflow publishes
    (arguments,) = [args for _, step, args in _release_commands() if step == "build"]
    assert "--platforms" in arguments, "release build without --platforms publishes the host's platform alone"
    value = arguments[arguments.index("--platforms") + 1]
    assert tuple(value.split(",")) == DECLARED, f"release.yml builds {value}, image.toml declares {DECLARED}"


def test_every_later_step_takes_the_platforms_from_the_state_and_cannot_narrow_them() -> None:
    commands = list(_release_commands())
    assert [step for _, step, _ in commands] == list(STEPS)
    for job, step, arguments in commands:
        if step != "build":
            assert not any(a.startswith("--platform") for a in arguments), f"{job}: release {step} {arguments}"
    # The CLI agrees: only `release build` (and the whole `release`) has a platform option,
    # so contracts, describe, push, sign, verify, tag and manifest read the state's platforms.
    for name, command in release_cmd.commands.items():
        options = {opt for param in command.params for opt in getattr(param, "opts", [])}
        assert ("--platforms" in options) is (name == "build"), name
        assert "--platform" not in options, name


def test_the_build_job_registers_arm64_emulation_as_make_image_multiarch_does() -> None:
    runs = [step.get("run") or "" for step in _jobs()["build"]["steps"]]
    engine = next(n for n, run in enumerate(runs) if re.fullmatch(r"sudo make engine\s*", run))
    build = next(n for n, run in enumerate(runs) if "terminai-sandbox release build" in run)
    assert engine < build, "qemu-user must be registered before the index is built"
    makefile = (ROOT / "Makefile").read_text()

    def prerequisites(target: str) -> set[str]:
        match = re.search(rf"^{target}:([^#\n]*)", makefile, flags=re.MULTILINE)
        assert match, target
        return set(match.group(1).split())

    assert "engine" in prerequisites("image-multiarch")  # the same preparation as the CI multiarch job
    assert "host-tools" in prerequisites("engine")
    recipe = makefile.split("\nhost-tools:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/ensure-host-tools all" in recipe
    tools = (ROOT / "scripts" / "ensure-host-tools").read_text()
    assert "need+=(qemu-user-static)" in tools and "update-binfmts --enable qemu-aarch64" in tools


def test_the_release_directory_artifact_leaves_the_build_directory_out() -> None:
    (upload,) = [
        step
        for step in _jobs()["build"]["steps"]
        if str(step.get("uses", "")).startswith("actions/upload-artifact@") and step["with"]["name"] == "release-dist"
    ]
    paths = upload["with"]["path"].splitlines()
    version = "${{ needs.version.outputs.version }}"
    assert paths == [f"dist/{version}/", f"!dist/{version}/build/"]


def _run_naming_script(where: Path) -> subprocess.CompletedProcess[str]:
    """The publish job's step that names each platform's files, run in ``where`` (as bash -e would)."""
    if shutil.which("jq") is None:
        pytest.skip("jq (which the GitHub runner has) is not installed here")
    (step,) = [s for s in _jobs()["publish"]["steps"] if "sbom.path" in (s.get("run") or "")]
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", str(step["run"])],
        cwd=where,
        env={"VERSION": "1.2.3", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_the_release_page_attaches_each_platforms_sbom_and_provenance_under_its_own_name(tmp_path: Path) -> None:
    target = tmp_path / "dist" / "1.2.3"
    platforms = {}
    for platform in DECLARED:
        folder = platform.replace("/", "-")
        (target / folder).mkdir(parents=True)
        for name in ("sbom.cdx.json", "provenance.slsa.json"):
            (target / folder / name).write_text(f'{{"{platform}": "{name}"}}')
        platforms[platform] = {
            "sbom": {"path": f"{folder}/sbom.cdx.json", "sha256": "sha256:0"},
            "provenance": {"path": f"{folder}/provenance.slsa.json", "sha256": "sha256:0"},
        }
    (target / "release.json").write_text(json.dumps({"platforms": platforms}))
    done = _run_naming_script(tmp_path)
    assert done.returncode == 0, done.stderr
    expected = {f"{p.replace('/', '-')}.{n}" for p in DECLARED for n in ("sbom.cdx.json", "provenance.slsa.json")}
    assert {path.name for path in (tmp_path / "assets").iterdir()} == expected
    for platform in DECLARED:
        attached = tmp_path / "assets" / f"{platform.replace('/', '-')}.sbom.cdx.json"
        assert attached.read_text() == f'{{"{platform}": "sbom.cdx.json"}}'
    create = next(s["run"] for s in _jobs()["publish"]["steps"] if "gh release create" in (s.get("run") or ""))
    assert "assets/*.sbom.cdx.json" in create and "assets/*.provenance.slsa.json" in create
    assert "dist/${VERSION}/sbom.cdx.json" not in create  # a one-image release's file: an index has none


@pytest.mark.parametrize("body", ['{"platforms": {}}', "{}"])
def test_publishing_a_release_json_without_platforms_stops(tmp_path: Path, body: str) -> None:
    (tmp_path / "dist" / "1.2.3").mkdir(parents=True)
    (tmp_path / "dist" / "1.2.3" / "release.json").write_text(body)
    done = _run_naming_script(tmp_path)
    assert done.returncode != 0
    assert "lists no platform" in done.stdout + done.stderr
