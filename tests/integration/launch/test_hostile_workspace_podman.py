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
from tests.integration.launch.test_hostile_workspace import _project, _run, race, session_one, session_two, swapping
from tests.integration.launch.test_launch import Site
from tests.integration.launch.test_podman import PODMAN, _User, podman_site, rootless_user  # noqa: F401  (fixtures)

pytestmark = pytest.mark.integration
LAUNCHES = 12  # a podman launch takes 2-3 s here; the staging stress below races many more


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
    seen = race(source, lambda: _run(site, work, "ls", "-a", "/data/h", env=mounts), LAUNCHES)
    assert sum(seen.values()) == LAUNCHES and seen.get("mounted", 0) >= 2, seen


# Run as the rootless user with the installed launcher's interpreter: stage SOURCE ROUNDS
# times while the test swaps it, and print what podman's namespaces hold at each staging
# path, as nsenter (util-linux) sees it from inside them.
STRESS = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from terminai_sandbox.errors import ConfigError
    from terminai_sandbox.launch import held_mounts
    source, other, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    namespace = held_mounts.podman_namespace(os.environ)
    assert namespace is not None, "no rootless podman pause process"
    seen = {"staged": 0, "refused": 0, "listings": []}
    for round_ in range(rounds):
        with held_mounts.Staging(f"stress{round_}", cwd=other, namespace=namespace) as staging:
            try:
                placed = staging.place(source, "/data/d", read_only=True)
                staging.pin()
            except ConfigError:
                seen["refused"] += 1
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

        # The racing swapper, outside the working directory (the path the unpinned launcher
        # could not cover): the session gets the checked folder or a refusal, never /var/run.
        source = shared / "d"
        mounts = {**env, "SANDBOX_MOUNTS": f"{source}:/data/h:ro"}
        seen = race(source, lambda: _run(site, shared / "work", "ls", "-a", "/data/h", env=mounts, **run_as), LAUNCHES)
        assert sum(seen.values()) == LAUNCHES and seen.get("mounted", 0) >= 2, seen
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
