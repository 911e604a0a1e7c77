"""What the contract report says of an emulated run: each guarantee the image's executor was
refused under qemu-user is named with its proof; one it was granted is not; a probe that did
not answer counts as refused (never as held)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from terminai_sandbox.common.platforms import native_platform
from terminai_sandbox.emulation import GUARANTEES, EmulationReport, image_platform, probe

FOREIGN = "arm64" if native_platform() == "linux/amd64" else "amd64"
MACHINE = {"arm64": "aarch64", "amd64": "x86_64"}[FOREIGN]


class _Engine:
    """Answers inspect with an image of ``architecture`` and a probe run with ``output``."""

    def __init__(self, architecture: str, output: bytes, code: int = 0) -> None:
        self.architecture, self.output, self.code = architecture, output, code
        self.commands: list[Sequence[str]] = []

    def inspect_image(self, reference: str) -> dict[str, Any]:
        return {"Id": reference, "Os": "linux", "Architecture": self.architecture}

    def run(self, image: str, command: Sequence[str], **options: Any) -> tuple[int, bytes, bytes]:
        self.commands.append(command)
        assert options["network_mode"] == "none" and options["read_only"] and options["cap_drop"] == ["ALL"]
        return self.code, self.output, b"probe stderr"


def _probe(engine: _Engine) -> EmulationReport:
    return probe(engine, "sha256:" + "a" * 64)  # type: ignore[arg-type]


def test_a_native_image_is_not_probed_and_names_nothing() -> None:
    engine = _Engine(native_platform().split("/")[1], b"")
    report = _probe(engine)
    assert not report.emulated and report.by_simulation() == () and report.lines() == []
    assert engine.commands == []


def test_both_refusals_are_named_with_their_proofs() -> None:
    answer = {"executor.seccomp": "refused: Invalid argument", "executor.landlock": "refused: no Landlock system calls"}
    report = _probe(_Engine(FOREIGN, json.dumps(answer).encode() + b"\n"))
    assert report.emulated and report.platform == f"linux/{FOREIGN}"
    assert [g.name for g in report.by_simulation()] == [g.name for g in GUARANTEES]
    text = "\n".join(report.lines())
    assert "proven by simulation: executor.seccomp" in text and "under emulation refused: Invalid argument" in text
    assert "test_seccomp_aarch64.py" in text
    assert report.to_dict()["proven_by_simulation"].keys() == {"executor.seccomp", "executor.landlock"}


def test_a_guarantee_emulation_held_is_not_claimed_as_simulated() -> None:
    answer = {"executor.seccomp": "refused: Invalid argument", "executor.landlock": "held (ABI 6)"}
    report = _probe(_Engine(FOREIGN, json.dumps(answer).encode()))
    assert [g.name for g in report.by_simulation()] == ["executor.seccomp"]
    assert report.to_dict()["under_emulation"]["executor.landlock"] == "held (ABI 6)"


def test_a_probe_that_did_not_answer_counts_every_guarantee_as_refused() -> None:
    for engine in (_Engine(FOREIGN, b"Traceback ...", code=1), _Engine(FOREIGN, b'{"executor.seccomp": "held"}')):
        report = _probe(engine)
        assert [g.name for g in report.by_simulation()] == [g.name for g in GUARANTEES]
        assert all(got.startswith("refused: the probe did not run") for _, got in report.probed)


def test_the_engines_machine_names_map_to_platforms() -> None:
    assert image_platform({"Os": "linux", "Architecture": MACHINE}) == f"linux/{FOREIGN}"
    assert image_platform({"Os": "linux", "Architecture": FOREIGN}) == f"linux/{FOREIGN}"
