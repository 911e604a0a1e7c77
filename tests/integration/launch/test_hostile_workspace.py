"""The project folder is hostile: the agent writes it, and the next launch reads it.

Session 1 (agent code) tries to plant what runs later; a folder already holding a fake
toolset, a fake ``python3``, planted hooks and links is then launched again: session 2 must
run the verified toolset, as a non-root user, with no engine socket and nothing planted
written back. A swapper racing the launch never gets the engine's folder mounted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from terminai_sandbox.assemble import BuildResult
from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.launch import held_mounts

from tests.fixtures.registry import RegistryServer
from tests.integration.launch.test_launch import Site

pytestmark = pytest.mark.integration
LAUNCHES = 30

# Every READ_ONLY entry protected in _project's folder (folders and placeholder files always,
# the others because the folder holds them), as the agent would write it from inside the session.
PRESENT = (".bashrc", ".profile")
PLANT = "\n".join(
    f"{{ mkdir -p {entry[:-1]} && echo planted > {entry[:-1]}/x; }} 2>/dev/null && echo WROTE {entry}"
    if entry.endswith("/")
    else f"echo planted >> {entry.rstrip('+')} 2>/dev/null && echo WROTE {entry}"
    for entry in held_mounts.READ_ONLY
    if entry.endswith(("/", "+")) or entry in PRESENT
)


@pytest.fixture()
def site(registry: RegistryServer, tmp_path: Path, built_image: BuildResult) -> Site:
    os.chmod(tmp_path, 0o755)
    site = Site(registry, tmp_path)
    site.push(built_image.oci_layout.root, "0.1.0")
    return site


def _run(
    site: Site, project: Path, *command: str, env: dict[str, str] | None = None, **as_user: Any
) -> subprocess.CompletedProcess[str]:
    """``run`` in ``project``; ``as_user``: Site.cli's ``user``, ``group`` and ``cli`` for another user."""
    return site.cli(
        "run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", *command, cwd=project, env=env, **as_user
    )


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n")
    for name in (".envrc", *PRESENT):
        (project / name).write_text("# the user's own\n")
    os.chmod(project, 0o777)  # the session's user (10001 on a root host) writes the workspace
    return project


def test_session_one_cannot_plant_what_runs_later(site: Site, engine: DockerApi, tmp_path: Path) -> None:
    session_one(site, _project(tmp_path), {})


def session_one(site: Site, project: Path, engine_env: dict[str, str], **as_user: Any) -> None:
    """Session 1 writes every file the launcher, git and the shells read later: none lands."""
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    result = _run(site, project, "sh", "-c", PLANT + "\necho DONE", env=engine_env, **as_user)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines() == ["DONE"], result.stdout  # not one WROTE
    # Nothing planted, and the placeholders the launcher made for the session are gone.
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before
    assert all("planted" not in p.read_text() for p in project.rglob("*") if p.is_file())
    # The workspace itself stays writable.
    wrote = _run(
        site, project, "sh", "-c", "echo work > notes.txt && mkdir -p src && echo ok", env=engine_env, **as_user
    )
    assert wrote.returncode == 0 and wrote.stdout.strip() == "ok", wrote.stderr
    assert (project / "notes.txt").read_text() == "work\n"


def test_session_two_runs_the_verified_toolset_whatever_the_folder_holds(
    site: Site, engine: DockerApi, tmp_path: Path
) -> None:
    session_two(site, _project(tmp_path), {}, uid=10001 if os.getuid() == 0 else os.getuid())


def session_two(site: Site, project: Path, engine_env: dict[str, str], *, uid: int, **as_user: Any) -> None:
    """Session 2 starts in a folder holding every plant: the verified toolset runs, as ``uid``."""
    # What an earlier session (or anyone with the folder) left: a fake toolset where
    # `python3 -m` and a console script would find it, a fake python3 on a writable PATH
    # entry, a bashrc link to the host's secrets, a socket and a FIFO.
    fake = project / "terminai_apts"
    fake.mkdir()
    (fake / "__init__.py").write_text("print('FAKE-TOOLSET')\nraise SystemExit(0)\n")
    (fake / "health.py").write_text("print('FAKE-HEALTH')\n")
    (project / "bin").mkdir()
    (project / "bin" / "python3").write_text("#!/bin/sh\necho FAKE-PYTHON\n")
    (project / "bin" / "python3").chmod(0o755)
    (project / "terminai_apts.pth").write_text("import os; print('FAKE-PTH')\n")
    os.mkfifo(project / "fifo")
    result = _run(
        site,
        project,
        "sh",
        "-c",
        "id -u; terminai-apts --help >/dev/null && echo CLI-OK; "
        "/usr/bin/python3 -I -c 'import terminai_apts; print(terminai_apts.__file__)'; "
        "for s in /var/run/docker.sock /run/docker.sock /run/podman/podman.sock /run/user/*/podman/podman.sock; "
        "do test -e $s && echo SOCKET $s; done; echo NO-SOCKET",
        env=engine_env,
        **as_user,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert "FAKE" not in result.stdout + result.stderr
    assert lines[0] == str(uid)
    assert lines[1] == "CLI-OK" and lines[2].startswith("/usr/local/lib/python3.13/dist-packages/terminai_apts/")
    assert lines[3] == "NO-SOCKET"
    # A bashrc that leads elsewhere is refused before the engine starts, naming the file.
    (project / ".terminai").mkdir()
    os.symlink("/etc/shadow", project / ".terminai" / "sandbox.bashrc")
    refused = _run(site, project, "true", env=engine_env, **as_user)
    assert refused.returncode == 3 and "sandbox.bashrc cannot be read without following links" in refused.stderr
    # A reserved knob is refused, naming it; an ordinary one still works.
    (project / ".terminai" / "sandbox.bashrc").unlink()
    for knob in (f"PYTHONPATH={project}", f"PATH={project}/bin:/usr/bin"):
        blocked = _run(site, project, "true", env={**engine_env, "SANDBOX_ENV": knob}, **as_user)
        assert blocked.returncode == 3 and knob.split("=")[0] in blocked.stderr, blocked.stderr
    ordinary = _run(site, project, "printenv", "FOO", env={**engine_env, "SANDBOX_ENV": "FOO=bar"}, **as_user)
    assert ordinary.returncode == 0 and ordinary.stdout.strip() == "bar", ordinary.stderr


@contextlib.contextmanager
def swapping(source: Path, aside: Path, stands: tuple[float, float] = (0.02, 0.2)) -> Iterator[None]:
    """A thread swapping ``source`` for a link to /var/run and back while the block runs.

    The directory while preflight checks it, a link to /var/run while the engine creates
    the container: the link lasts 20-200 ms, about as long as the steps between, and the
    directory ``stands`` (seconds; longer for an engine whose CLI starts slowly, so that
    some launches pass every check).
    """
    stop = threading.Event()

    def swap() -> None:
        chance = random.Random(7)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                source.rename(aside)
                os.symlink("/var/run", source)
            stop.wait(chance.uniform(0.02, 0.2))
            with contextlib.suppress(OSError):
                os.unlink(source)
                aside.rename(source)
            stop.wait(chance.uniform(*stands))

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        yield
    finally:
        stop.set()
        swapper.join()


def race(
    source: Path,
    launch: Callable[[], subprocess.CompletedProcess[str]],
    launches: int,
    stands: tuple[float, float] = (0.02, 0.2),
) -> dict[str, int]:
    """``launches`` sessions listing the mounted ``source`` while it is swapped: never /var/run inside."""
    seen: dict[str, int] = {}
    with swapping(source, source.parent / "aside", stands):
        for _ in range(launches):
            result = launch()
            if result.returncode == 0:
                listing = tuple(sorted(result.stdout.split()))
                assert listing == (".", "..", "mine"), result.stdout  # never docker.sock
                seen["mounted"] = seen.get("mounted", 0) + 1
            else:
                assert result.returncode == 3, result.stderr  # refused at preflight, never followed
                seen["refused"] = seen.get("refused", 0) + 1
    return seen


def _engine_child(parent: int, name: str) -> bool:
    """Whether ``parent`` has spawned ``name run`` (the session's engine CLI; preflight's
    ``podman version`` and inspects come before the launcher's last checks)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                comm, _, rest = stat.partition("(")[2].rpartition(")")
                if comm == name and int(rest.split()[1]) == parent:
                    argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                    if argv[1:2] == [b"run"]:
                        return True
    return False


def swap_when_the_engine_starts(
    command: list[str], *, env: dict[str, str], cwd: Path, source: Path, engine: str
) -> subprocess.CompletedProcess[str]:
    """Run the launcher ``command``; the moment it spawns the ``engine`` CLI (every check of
    the launcher done), swap ``source`` for a link to /var/run. The engine resolves mount
    sources later still (at container start), so this is the last window a swap can use."""
    launcher = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    swapped = False
    try:
        while launcher.poll() is None and not swapped:
            if _engine_child(launcher.pid, engine):
                source.rename(source.parent / "aside")
                os.symlink("/var/run", source)
                swapped = True
            else:
                time.sleep(0.001)
        out, err = launcher.communicate(timeout=300)
    finally:
        if launcher.poll() is None:
            launcher.kill()
        if swapped:
            os.unlink(source)
            (source.parent / "aside").rename(source)
    assert swapped, f"the launcher ended before it spawned {engine}: {err}"
    return subprocess.CompletedProcess(command, launcher.returncode, out, err)


def test_a_swapped_mount_source_never_reaches_the_engine_socket(site: Site, engine: DockerApi, tmp_path: Path) -> None:
    project = tmp_path / "work"
    project.mkdir()
    source = tmp_path / "d"
    source.mkdir()
    (source / "mine").write_text("x")
    seen = race(
        source,
        lambda: _run(site, project, "ls", "-a", "/data/h", env={"SANDBOX_MOUNTS": f"{source}:/data/h:ro"}),
        LAUNCHES,
    )
    assert sum(seen.values()) == LAUNCHES and seen.get("mounted", 0) >= 3, seen


@pytest.mark.parametrize(
    ("dockerfile", "message"),
    [
        # The swap: a second stage that copies the verified files into an image of its own.
        (
            "ARG BASE_IMAGE\nFROM ${BASE_IMAGE} AS v\nFROM scratch\nCOPY --from=v / /\nENTRYPOINT []\nUSER 0\n",
            "must be exactly FROM ${BASE_IMAGE}",
        ),
        ("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nUSER root\n", "the last USER is 'root'"),
        # What the parser lets through (RUN runs as root here), the built image's own check refuses.
        (
            "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nUSER root\nRUN cp /bin/sh /usr/local/bin/rootsh && chmod u+s "
            "/usr/local/bin/rootsh\nUSER 10001:10001\n",
            "/usr/local/bin/rootsh is setuid or setgid",
        ),
        (
            "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nUSER root\nRUN echo 'print(1)' > "
            "/usr/local/lib/python3.13/dist-packages/terminai_apts/health.py\nUSER 10001:10001\n",
            "changes the verified toolset",
        ),
        (
            "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nUSER root\n"
            "RUN echo 'import os' > /usr/lib/python3/dist-packages/x.pth\nUSER 10001:10001\n",
            "would run at every Python start",
        ),
    ],
)
def test_a_project_layer_can_only_add_files(
    site: Site, engine: DockerApi, tmp_path: Path, dockerfile: str, message: str
) -> None:
    project = tmp_path / "project"
    (project / ".terminai").mkdir(parents=True)
    (project / ".terminai" / "sandbox.Dockerfile").write_text(dockerfile)
    result = _run(site, project, "sh", "-c", "echo COMMAND-RAN")
    assert result.returncode == 13, result.stderr
    assert message in result.stderr and "COMMAND-RAN" not in result.stdout, result.stderr
    mine = "terminai-project/" + hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:12]
    assert not [t for i in engine_images() for t in i if t.startswith(mine + ":")], "refused image kept"


def test_an_ordinary_project_layer_still_works_as_a_non_root_session(
    site: Site, engine: DockerApi, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".terminai").mkdir(parents=True)
    (project / "tool.sh").write_text("echo TOOL-RAN\n")
    (project / ".terminai" / "sandbox.Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nUSER root\nRUN mkdir -p /opt/tool\nCOPY tool.sh /opt/tool/tool.sh\n"
        "ENV FOO=bar\nLABEL org.example.team=red\nUSER 10001:10001\n"
    )
    result = _run(site, project, "sh", "-c", "id -u; sh /opt/tool/tool.sh; printenv FOO")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [("10001" if os.getuid() == 0 else str(os.getuid())), "TOOL-RAN", "bar"]
    assert "built project layer" in result.stderr
    again = _run(site, project, "true")
    assert again.returncode == 0 and "cached project layer" in again.stderr, again.stderr
    # Only this project's image: another worker's test may be about to reuse its own.
    for image in docker.from_env().images.list(filters={"label": f"dev.terminai.project={project.resolve()}"}):
        subprocess.run(["docker", "rmi", "-f", image.id], capture_output=True, check=False)


def engine_images() -> list[list[str]]:
    listed = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True, check=True
    )
    return [[line] for line in listed.stdout.split()]
