"""scripts/ensure-host-tools decides what a machine lacks from PATH and the file system.

The script runs for real with its lookups redirected: PATH is a directory holding only
the commands a case says the machine has (links to the real ones), and TERMINAI_HOST_ROOT
is a directory standing for / (the CA bundle, podman's catatonit). ``--plan`` prints the
decision without installing; without it, a machine that lacks something and has no
apt-get (or is not root) is refused with the apt-get line to run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_sandbox.assemble import repo_root

SCRIPT = repo_root() / "scripts" / "ensure-host-tools"
ENGINE_TOOLS = {
    "mmdebstrap": "mmdebstrap",
    "dockerd": "docker.io",
    "docker-registry": "docker-registry",
    "skopeo": "skopeo",
    "openssl": "openssl",
    "newuidmap": "uidmap",
    "podman": "podman",
    "catatonit": "catatonit",
    "runsc": "runsc",
    "bwrap": "bubblewrap",
    "arch-test": "arch-test",
    "qemu-aarch64-static": "qemu-user-static",
    "update-binfmts": "binfmt-support",
}
# cosign is not a Debian 12 package: both majors come from newer suites into a versioned prefix;
# trixie's runsc (newer than Debian 12's) goes beside the host's into a prefix of its own.
TOOLS = "/opt/terminai-host-tools"
COSIGNS = {"cosign-2": "cosign/trixie", "cosign-3": "cosign/forky"}
FETCHED = {**COSIGNS, "runsc-trixie": "runsc/trixie"}
ALL_PACKAGES = [
    "python3",
    "python3-venv",
    "ca-certificates",
    *ENGINE_TOOLS.values(),
    "debian-archive-keyring",  # checks the trixie and forky indexes cosign and runsc come from
    *FETCHED.values(),
]


class Machine:
    """A PATH directory and a root directory standing for what a machine has."""

    def __init__(self, tmp: Path) -> None:
        self.bin, self.root = tmp / "bin", tmp / "root"
        self.bin.mkdir()
        self.root.mkdir()
        for tool in ("bash", "id"):  # what the script itself runs on
            self.link(tool)

    def link(self, tool: str, target: str | None = None) -> None:
        found = target or shutil.which(tool)
        assert found, f"{tool} is not on this machine"
        (self.bin / tool).symlink_to(found)

    def fake(self, tool: str) -> None:
        """A command that exists but does nothing (the decision only asks whether it is there)."""
        path = self.bin / tool
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)

    def python_without_venv(self) -> None:
        path = self.bin / "python3"
        path.write_text("#!/bin/sh\necho 'No module named ensurepip' >&2\nexit 1\n")
        path.chmod(0o755)

    def ca_bundle(self) -> None:
        certs = self.root / "etc" / "ssl" / "certs"
        certs.mkdir(parents=True)
        (certs / "ca-certificates.crt").write_text("")

    def debian_keyring(self) -> None:
        keyrings = self.root / "usr" / "share" / "keyrings"
        keyrings.mkdir(parents=True)
        (keyrings / "debian-archive-keyring.gpg").write_text("")

    def cosign(self, prefix: str) -> None:
        self.fetched(prefix, "cosign")

    def fetched(self, prefix: str, tool: str) -> None:
        """A binary placed under the tools prefix (by an earlier run of the script)."""
        path = self.root / "opt" / "terminai-host-tools" / prefix / "bin" / tool
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": str(self.bin), "TERMINAI_HOST_ROOT": str(self.root)}
        return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def _planned(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split("would install: ", 1)[1].split()


@pytest.fixture()
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def test_a_bare_machine_needs_everything(machine: Machine) -> None:
    assert _planned(machine.run("--plan")) == ALL_PACKAGES
    assert _planned(machine.run("--plan", "python")) == ["python3", "python3-venv", "ca-certificates"]
    assert _planned(machine.run("--plan", "demo")) == [
        "python3",
        "python3-venv",
        "ca-certificates",
        "mmdebstrap",
        "docker.io",
        "docker-registry",
    ]


def test_the_reported_machine_gets_the_engine_the_registry_and_mmdebstrap(machine: Machine) -> None:
    # Python with venv and certificates, podman and friends, but no docker.io, docker-registry or mmdebstrap.
    machine.link("python3", sys.executable)
    machine.ca_bundle()
    for tool in (
        "skopeo",
        "openssl",
        "newuidmap",
        "podman",
        "catatonit",
        "runsc",
        "bwrap",
        "arch-test",
        "qemu-aarch64-static",
    ):
        machine.fake(tool)
    for tool in ("update-binfmts",):
        machine.fake(tool)
    for prefix in COSIGNS:
        machine.cosign(prefix)
    machine.fetched("runsc-trixie", "runsc")
    assert _planned(machine.run("--plan")) == ["mmdebstrap", "docker.io", "docker-registry"]
    assert _planned(machine.run("--plan", "demo")) == ["mmdebstrap", "docker.io", "docker-registry"]
    assert _planned(machine.run("--plan", "python")) == ["nothing"]


def test_the_demo_needs_the_docker_cli_not_podman_nor_a_local_dockerd(machine: Machine) -> None:
    # A developer whose engine runs elsewhere (DOCKER_HOST) has the docker CLI and no dockerd.
    machine.link("python3", sys.executable)
    machine.ca_bundle()
    for tool in ("docker", "docker-registry", "mmdebstrap"):
        machine.fake(tool)
    done = machine.run("demo")  # no apt-get on PATH: any install attempt would be refused
    assert done.returncode == 0, done.stderr
    assert done.stdout == "host tools (demo): all present\n"
    assert "docker.io" in _planned(machine.run("--plan", "all"))


def test_python_without_its_venv_module_gets_python3_venv(machine: Machine) -> None:
    machine.python_without_venv()
    machine.ca_bundle()
    assert _planned(machine.run("--plan", "python")) == ["python3-venv"]


def test_catatonit_in_podmans_libexec_counts(machine: Machine) -> None:
    libexec = machine.root / "usr" / "libexec" / "podman"
    libexec.mkdir(parents=True)
    (libexec / "catatonit").write_text("#!/bin/sh\n")
    (libexec / "catatonit").chmod(0o755)
    assert "catatonit" not in _planned(machine.run("--plan"))


def test_a_complete_machine_installs_nothing(machine: Machine) -> None:
    machine.link("python3", sys.executable)
    machine.ca_bundle()
    for tool in ENGINE_TOOLS:
        machine.fake(tool)
    for prefix in COSIGNS:
        machine.cosign(prefix)
    machine.fetched("runsc-trixie", "runsc")
    done = machine.run()  # no apt-get on PATH: any install attempt would be refused
    assert done.returncode == 0, done.stderr
    assert done.stdout == "host tools (all): all present\n"


def test_without_apt_get_what_is_missing_is_named_with_the_command_to_run(machine: Machine) -> None:
    machine.link("python3", sys.executable)
    machine.ca_bundle()
    done = machine.run()
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    apt = [*ENGINE_TOOLS.values(), "debian-archive-keyring"]
    assert lines[0] == "error: missing host tools: " + " ".join([*apt, *FETCHED.values()])
    assert lines[1].endswith("sudo apt-get install " + " ".join(apt) + ")")
    assert lines[2] == f"  hint: run 'sudo scripts/ensure-host-tools' to place Debian's cosign runsc under {TOOLS}"


def test_an_unknown_argument_is_a_usage_error(machine: Machine) -> None:
    done = machine.run("everything")
    assert done.returncode == 2
    assert done.stderr.startswith("error: unknown argument 'everything'")


def test_a_machine_without_gvisor_gets_runsc(machine: Machine) -> None:
    machine.link("python3", sys.executable)
    machine.ca_bundle()
    for tool in ENGINE_TOOLS:
        if tool != "runsc":
            machine.fake(tool)
    for prefix in COSIGNS:
        machine.cosign(prefix)
    machine.fetched("runsc-trixie", "runsc")
    assert _planned(machine.run("--plan")) == ["runsc"]
    assert _planned(machine.run("--plan", "python")) == ["nothing"]


def test_each_cosign_major_is_looked_for_in_its_own_prefix(machine: Machine) -> None:
    machine.link("python3", sys.executable)
    machine.ca_bundle()
    for tool in ENGINE_TOOLS:
        machine.fake(tool)
    machine.fake("docker")
    machine.cosign("cosign-2")
    machine.fetched("runsc-trixie", "runsc")
    assert _planned(machine.run("--plan")) == ["debian-archive-keyring", "cosign/forky"]
    machine.debian_keyring()
    assert _planned(machine.run("--plan")) == ["cosign/forky"]
    assert _planned(machine.run("--plan", "demo")) == ["nothing"]
    # A cosign on PATH is not one of the two pinned majors: it does not count.
    machine.fake("cosign")
    assert _planned(machine.run("--plan")) == ["cosign/forky"]
    done = machine.run()
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: missing host tools: cosign/forky",
        f"  hint: run 'sudo scripts/ensure-host-tools' to place Debian's cosign under {TOOLS}",
    ]


def test_trixies_runsc_is_looked_for_in_its_own_prefix_not_on_path(machine: Machine) -> None:
    # Debian 12's runsc on PATH is the older release: it does not stand in for trixie's.
    machine.link("python3", sys.executable)
    machine.ca_bundle()
    machine.debian_keyring()
    for tool in (*ENGINE_TOOLS, "docker"):
        machine.fake(tool)
    for prefix in COSIGNS:
        machine.cosign(prefix)
    assert _planned(machine.run("--plan")) == ["runsc/trixie"]
    assert _planned(machine.run("--plan", "demo")) == ["nothing"]
    done = machine.run()
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: missing host tools: runsc/trixie",
        f"  hint: run 'sudo scripts/ensure-host-tools' to place Debian's runsc under {TOOLS}",
    ]
    # A cosign binary in runsc's prefix (or the reverse) is not the tool that prefix names.
    machine.fetched("runsc-trixie", "cosign")
    assert _planned(machine.run("--plan")) == ["runsc/trixie"]
    (machine.root / "opt" / "terminai-host-tools" / "runsc-trixie" / "bin" / "runsc").symlink_to("cosign")
    assert _planned(machine.run("--plan")) == ["nothing"]
