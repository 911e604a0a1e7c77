"""A build of another architecture starts only where binfmt_misc hands its binaries to qemu
with the F flag; the host's registration is read as the kernel exposes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from terminai_sandbox.assemble.foreign import emulation_problem, require_emulation
from terminai_sandbox.common.platforms import native_platform
from terminai_sandbox.errors import BuildError

FOREIGN = "arm64" if native_platform() == "linux/amd64" else "amd64"
ENTRY = {"arm64": "qemu-aarch64", "amd64": "qemu-x86_64"}[FOREIGN]
REGISTERED = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: {flags}\noffset 0\n"


def _binfmt(tmp_path: Path, text: str | None) -> Path:
    if text is not None:
        (tmp_path / ENTRY).write_text(text)
    return tmp_path


def test_the_native_architecture_needs_no_emulator(tmp_path: Path) -> None:
    assert emulation_problem(native_platform().split("/")[1], tmp_path) == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "is not registered"),
        (REGISTERED.format(flags="PF").replace("enabled", "disabled"), "is disabled"),
        (REGISTERED.format(flags="P"), "lacks the F flag (flags P)"),
    ],
)
def test_a_registration_that_cannot_run_the_build_is_refused_with_the_fix(
    tmp_path: Path, text: str | None, problem: str
) -> None:
    binfmt = _binfmt(tmp_path, text)
    with pytest.raises(BuildError) as caught:
        require_emulation(FOREIGN, binfmt)
    assert problem in caught.value.message
    assert f"update-binfmts --enable {ENTRY}" in (caught.value.hint or "")


def test_an_enabled_registration_with_the_f_flag_is_enough(tmp_path: Path) -> None:
    assert emulation_problem(FOREIGN, _binfmt(tmp_path, REGISTERED.format(flags="PF"))) == ""


def test_an_architecture_without_a_known_emulator_is_refused(tmp_path: Path) -> None:
    assert "no emulator is known for riscv64" in emulation_problem("riscv64", tmp_path)
