"""The hostile project folder on podman, rootful and rootless (a throwaway user).

The same attacks as ``test_hostile_workspace.py``: session 1 plants every file the launcher,
git and the shells read later; session 2 starts in a folder holding a fake toolset, a fake
``python3``, links, a FIFO, and must run the verified toolset as the unprivileged user with
no engine socket inside; a swapper racing the launch never gets ``/var/run`` mounted.

Rootless, the launcher cannot mount on the host, so it binds each checked source inside
podman's own user and mount namespaces; besides the real launches, a stress of that
staging is checked with util-linux's ``nsenter`` (not our code) looking into those
namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest
from terminai_sandbox.assemble import BuildResult

from tests.fixtures.launcher import InstalledLauncher
from tests.fixtures.registry import RegistryServer
from tests.integration.launch.test_hostile_workspace import (
    _project,
    _run,
    race,
    session_one,
    session_two,
    swap_when_the_engine_starts,
    swapping,
)
from tests.integration.launch.test_launch import Site
from tests.integration.launch.test_podman import PODMAN, _User, podman_site, rootless_user  # noqa: F401  (fixtures)

pytestmark = pytest.mark.integration
LAUNCHES = 12  # a podman launch takes 1-3 s here; the staging stress below races many more
ROOTLESS_LAUNCHES = 6  # slower still (a user namespace each); the last-moment swap below is the sharp one
STANDS = (0.3, 1.5)  # the directory stands this long between links: long enough for some launches


def test_rootful_podman_runs_the_verified_toolset_whatever_the_folder_holds(
    podman_site: Site,  # noqa: F811  (the fixture imported above)
    built_image: BuildResult,
    tmp_path: Path,
) -> None:
    site = podman_site
    site.push(built_image.oci_layout.root, "0.1.0")
    project = _project(tmp_path)
    session_one(site, project, PODMAN)
    shutil.rmtree(project)
    session_two(site, _project(tmp_path), PODMAN, uid=10001)
    # The racing swapper: root stages the held object, so the swap never reaches the session.
    work, source = tmp_path / "work", tmp_path / "d"
    work.mkdir()
    source.mkdir()
    (source / "mine").write_text("x")
    mounts = {**PODMAN, "SANDBOX_MOUNTS": f"{source}:/data/h:ro"}
    seen = race(source, lambda: _run(site, work, "ls", "-a", "/data/h", env=mounts), LAUNCHES, STANDS)
    assert sum(seen.values()) == LAUNCHES and seen.get("mounted", 0) >= 2, seen


EVIL_CONF = (
    '[containers]\nvolumes = ["/run:/hostrun:ro"]\npidns = "host"\nseccomp_profile = "unconfined"\n'
    'env = ["PYTHONPATH=/hostrun"]\n'
)
LOOK = "ls /hostrun 2>&1 | grep -c docker.sock; cat /proc/1/comm; grep Seccomp: /proc/self/status; echo COMMAND-RAN"


def test_podman_reads_no_configuration_that_undoes_the_hardening(
    podman_site: Site,  # noqa: F811  (the fixture imported above)
    built_image: BuildResult,
    tmp_path: Path,
) -> None:
    site = podman_site
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    work = tmp_path / "work"
    work.mkdir()
    assert _run(site, work, "true", env=PODMAN).returncode == 0  # pulls the verified image
    evil = tmp_path / "containers.conf"
    evil.write_text(EVIL_CONF)
    # The attack is real: podman itself, given the file, hands the session the host's /run
    # (the docker socket), the host's processes and no seccomp filter.
    image = f"{site.ref('0.1.0').rsplit(':', 1)[0]}@{digest}"
    hardened = ["--network", "none", "--cap-drop", "all", "--security-opt", "no-new-privileges"]
    limits = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
    plain = subprocess.run(
        ["podman", "run", "--rm", *hardened, *limits, "--entrypoint", "sh", image, "-c", LOOK],
        capture_output=True,
        text=True,
        env={**os.environ, "CONTAINERS_CONF": str(evil)},
        timeout=120,
        check=False,
    )
    lines = plain.stdout.splitlines()
    assert lines[0] == "1" and lines[2] == "Seccomp:\t0", plain  # /hostrun/docker.sock; no filter
    assert lines[1] not in ("sh", "catatonit"), plain  # the host's pid 1, not the container's
    # Through the launcher: refused at step 0, naming the variable, before podman runs anything.
    for name, value in (
        ("CONTAINERS_CONF", str(evil)),
        ("CONTAINERS_CONF_OVERRIDE", str(evil)),
        ("CONTAINERS_STORAGE_CONF", str(evil)),
        ("STORAGE_OPTS", "overlay.mount_program=/bin/true"),
        ("CONTAINER_HOST", f"unix://{tmp_path}/other.sock"),
    ):
        refused = _run(site, work, "sh", "-c", LOOK, env={**PODMAN, name: value})
        assert refused.returncode == 3 and f"{name} is set: for podman it" in refused.stderr, refused.stderr
        assert "COMMAND-RAN" not in refused.stdout


# Run as the rootless user with the installed launcher's interpreter: stage SOURCE ROUNDS
# times while the test swaps it, and print what podman's namespaces hold at each staging
# path, as nsenter (util-linux) sees it from inside them.
STRESS = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    from terminai_sandbox.errors import ConfigError
    from terminai_sandbox.launch import held_mounts
    source, other, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    namespace = held_mounts.podman_namespace(os.environ)
    assert namespace is not None, "no rootless podman pause process"
    seen = {"staged": 0, "refused": 0, "listings": [], "why": {}}
    for round_ in range(rounds):
        with held_mounts.Staging(f"stress{round_}", cwd=other, namespace=namespace) as staging:
            try:
                placed = staging.place(source, "/data/d", read_only=True)
                staging.pin()
            except ConfigError as exc:
                seen["refused"] += 1
                why = exc.message.replace(source, "SOURCE")
                seen["why"][why] = seen["why"].get(why, 0) + 1
                time.sleep(0.005)  # a refusal takes microseconds: spread the rounds over the swaps
                continue
            listing = subprocess.run(
                ["nsenter", "-t", str(namespace.pid), "-U", "-m", "--preserve-credentials", "ls", "-A", placed.source],
                capture_output=True, text=True, check=True,
            ).stdout.split()
            seen["staged"] += 1
            if listing != ["mine"]:
                seen["listings"].append(listing)
    root = os.path.join(namespace.runtime, held_mounts.NAMESPACE_STAGING)
    seen["left"] = [name for name in os.listdir(root) if name.startswith("stress")]
    seen["mounted"] = subprocess.run(
        ["nsenter", "-t", str(namespace.pid), "-U", "-m", "--preserve-credentials", "cat", "/proc/self/mountinfo"],
        capture_output=True, text=True, check=True,
    ).stdout.count(root + "/stress")
    print(json.dumps(seen))
    """
)


def test_rootless_podman_pins_what_was_checked(
    rootless_user: _User,  # noqa: F811  (the fixture imported above)
    registry: RegistryServer,
    built_image: BuildResult,
    installed_launcher: InstalledLauncher,
) -> None:
    user = rootless_user
    as_root = os.geteuid() == 0
    as_user = {"user": user.uid if as_root else None, "group": user.gid if as_root else None}
    shared = Path(tempfile.mkdtemp(prefix="terminai-rootless-hostile-"))
    try:
        shared.chmod(0o755)
        site = Site(registry, shared)
        site.pub.chmod(0o644)
        site.push(built_image.oci_layout.root, "0.1.0")
        runtime = shared / "runtime"
        runtime.mkdir(mode=0o700)
        env = {
            **PODMAN,
            "HOME": str(user.home),
            "USER": user.name,
            "LOGNAME": user.name,
            "XDG_RUNTIME_DIR": str(runtime),
        }
        places = [runtime, shared / "work", shared / "d", shared / "other"]
        for place in places[1:]:
            place.mkdir()
        (shared / "d" / "mine").write_text("x")
        first = _project(shared)
        for path in (*places, first, *first.rglob("*")):
            os.chown(path, user.uid, user.gid, follow_symlinks=False)
        os.chown(shared / "d" / "mine", user.uid, user.gid)
        run_as = {**as_user, "cli": installed_launcher.cli}
        session_one(site, first, env, **run_as)
        shutil.rmtree(first)
        second = _project(shared)
        for path in (second, *second.rglob("*")):
            os.chown(path, user.uid, user.gid, follow_symlinks=False)
        session_two(site, second, env, uid=user.uid, **run_as)
        # A session in the home directory could write ~/.config/containers/containers.conf
        # (volumes, host namespaces, no seccomp for every later podman container) or the image
        # storage under ~/.local/share/containers: refused before podman starts.
        at_home = _run(site, user.home, "sh", "-c", "echo COMMAND-RAN", env=env, **run_as)
        assert at_home.returncode == 3 and "COMMAND-RAN" not in at_home.stdout, at_home.stderr
        assert f"{user.home}/.config/containers, where rootless podman reads" in at_home.stderr, at_home.stderr

        # The racing swapper, outside the working directory (the path the unpinned launcher
        # could not cover): the session gets the checked folder or a refusal, never /var/run.
        source = shared / "d"
        mounts = {**env, "SANDBOX_MOUNTS": f"{source}:/data/h:ro"}
        launch = lambda: _run(site, shared / "work", "ls", "-a", "/data/h", env=mounts, **run_as)  # noqa: E731
        seen = race(source, launch, ROOTLESS_LAUNCHES, STANDS)
        assert sum(seen.values()) == ROOTLESS_LAUNCHES and seen.get("mounted", 0) >= 1, seen
        # The last moment: swapped once podman is already spawned, after every check of the
        # launcher. Podman resolves the staging path in its namespace: still the checked folder.
        last = swap_when_the_engine_starts(
            _as(user, installed_launcher.cli, site, "ls", "-a", "/data/h"),
            env={"PATH": os.environ["PATH"], **mounts},
            cwd=shared / "work",
            source=source,
            engine="podman",
        )
        assert last.returncode == 0 and sorted(last.stdout.split()) == [".", "..", "mine"], last
        ledger = user.home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
        runs = [json.loads(line) for line in ledger.read_text().splitlines() if '"event": "run"' in line]
        # The engine was given the staging path in podman's namespace, not the swappable one.
        argv = " ".join(runs[-1]["argv"])
        assert f"{runtime}/terminai-sandbox/mounts/" in argv and f"{source}:" not in argv, argv

        # Many more stagings than launches, against a swapper flipping every 20-200 ms.
        command = [str(installed_launcher.python), "-c", STRESS, str(source), str(shared / "other"), "400"]
        if as_root:
            command = ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups", *command]
        with swapping(source, shared / "aside"):
            stressed = subprocess.run(
                command, capture_output=True, text=True, env=env, cwd=shared, timeout=600, check=False
            )
        assert stressed.returncode == 0, stressed.stderr
        report = json.loads(stressed.stdout)
        assert report["listings"] == [], report["listings"]  # never /var/run's contents
        assert report["staged"] > 0 and report["refused"] > 0, report
        assert report["left"] == [] and report["mounted"] == 0, report  # nothing left bound
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _as(user: _User, cli: Path, site: Site, *command: str, groups: tuple[int, ...] = ()) -> list[str]:
    """``run COMMAND`` as ``user`` (as root: through setpriv, with only ``groups`` besides its own)."""
    argv = [str(cli), "run", "--image", site.ref("0.1.0"), "--key", str(site.pub), "--", *command]
    if os.geteuid() != 0:
        return argv
    extra = [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"]
    return ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", *extra, *argv]


def test_docker_as_a_non_root_user_leaves_the_last_moment_open(
    rootless_user: _User,  # noqa: F811  (the fixture imported above)
    registry: RegistryServer,
    built_image: BuildResult,
    installed_launcher: InstalledLauncher,
) -> None:
    """The window that remains, kept as a test: closing it (or widening it) shows here.

    Docker as a non-root user (in the socket's group) cannot pin: mount needs privilege in
    dockerd's mount namespace, and a /proc/PID/fd/N source is refused by the kernel (EINVAL:
    runc binds inside the container's new mount namespace). The launcher refuses what it
    can see: a swap before its last walk is refused, and a source inside the working
    directory always is. A swap after it has spawned the docker CLI still lands.
    """
    user = rootless_user
    socket_group = os.stat("/var/run/docker.sock").st_gid
    shared = Path(tempfile.mkdtemp(prefix="terminai-docker-user-"))
    try:
        shared.chmod(0o755)
        site = Site(registry, shared)
        site.pub.chmod(0o644)
        site.push(built_image.oci_layout.root, "0.1.0")
        work, source = shared / "work", shared / "d"
        for place in (work, source):
            place.mkdir()
            os.chown(place, user.uid, user.gid)
        (source / "mine").write_text("x")
        env = {"PATH": os.environ["PATH"], "HOME": str(user.home), "TERMINAI_SANDBOX": "docker"}
        groups = (socket_group,) if os.geteuid() == 0 else ()
        # Inside the working directory: refused (the session itself could swap it).
        inner = work / "inner"
        inner.mkdir()
        os.chown(inner, user.uid, user.gid)
        inside = subprocess.run(
            _as(user, installed_launcher.cli, site, "true", groups=groups),
            env={**env, "SANDBOX_MOUNTS": f"{inner}:/data/i:ro"},
            cwd=work,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert inside.returncode == 3 and f"the mount source {inner} lies inside {work}" in inside.stderr, inside
        # Outside it, swapped once the docker CLI runs: docker mounts what the path names then.
        last = swap_when_the_engine_starts(
            _as(user, installed_launcher.cli, site, "ls", "-a", "/data/h", groups=groups),
            env={**env, "SANDBOX_MOUNTS": f"{source}:/data/h:ro"},
            cwd=work,
            source=source,
            engine="docker",
        )
        assert last.returncode == 0, last.stderr
        assert "docker.sock" in last.stdout.split(), last.stdout  # the remaining window, documented
    finally:
        shutil.rmtree(shared, ignore_errors=True)
