#!/usr/bin/env python3
"""Session start time of `terminai-sandbox run` against plain `docker run`, in the same run.

Setup: the image (cached build) pushed to a loopback `docker-registry` and signed with a
throwaway key. Then, N times each, interleaved:

* baseline: `docker run --rm --network none IMAGE@DIGEST true`;
* hardened floor: the exact `docker run` command line the launcher builds (read from its
  audit ledger), run directly: what the hardening flags alone cost;
* launcher, warm verification cache, digest reference (`REPO:TAG@sha256:...`, the form a
  release configures): no registry round trip;
* launcher, warm verification cache, tag reference (`REPO:TAG`): dockerd resolves the tag
  (one registry round trip);
* launcher, first verification: the tag reference with an empty state directory;
* the launcher alone, refused at preflight step 1 (DOCKER_HOST names an absent socket):
  interpreter, imports, configuration and the ledger, with no engine time in it;
* the launcher's own part of a warm start: the digest-reference launch with `docker` on
  its PATH replaced by `true`, so every preflight step, engine round trip and ledger write
  runs but no container starts (wall and CPU time: what engine load blurs least);
* for scale: the launcher's Python interpreter starting and exiting (`python -c pass`);
* gVisor: plain `docker run --runtime runsc` and the launcher with
  `TERMINAI_SANDBOX_RUNTIME=runsc` (warm cache, digest reference), against their runc
  counterparts above (runsc registered by `scripts/ensure-engine`).

With `--baseline-ref REF` the launcher of that git commit (its two packages' sources, run
by the same interpreter through a copy of the console script) is measured in the same
run, interleaved: warm launches by digest and by tag, and refused at step 1. On a machine
whose speed drifts, only same-run ratios compare.

`--launcher-only` measures just the launcher refused at step 1 (and `python -c pass`), no
engine and no image: the launcher's own cost, which engine load does not blur.

    python benchmarks/launch.py [--runs 21] [--baseline-ref main] [--launcher-only]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from terminai_sandbox.assemble import BuildOptions, build_image
from terminai_sandbox.launch.held_mounts import READ_ONLY
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox.signing import sign
from terminai_sandbox.signing.formats import keys
from terminai_sandbox_dev.localregistry import loopback_registry

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("packages/terminai-sandbox/src", "packages/terminai-apts/src")
# What pip writes as the `terminai-sandbox` console script, so a baseline starts the same way.
CONSOLE_SCRIPT = """import re
import sys
from terminai_sandbox.console import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def baseline_launcher(ref: str, work: Path) -> tuple[list[str], dict[str, str]]:
    """The command and extra environment that run the launcher of commit ``ref``."""
    # contracts/ too: the toolset's contract.json is a symlink into it.
    archive = subprocess.run(
        ["git", "archive", ref, *SOURCES, "contracts"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    tree = work / "baseline"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    script = tree / "terminai-sandbox"
    script.write_text(CONSOLE_SCRIPT)
    return [sys.executable, str(script)], {"PYTHONPATH": os.pathsep.join(str(tree / s) for s in SOURCES)}


def unstaged(argv: list[str], mounts: list[dict[str, object]]) -> list[str]:
    """The launcher's argv with each staging path (gone once it exited) replaced by the path it pinned."""
    words = list(argv)
    for index, word in enumerate(words):
        if word.startswith("type=bind,src=/run/terminai-sandbox/mounts/"):
            target = word.split(",dst=", 1)[1].split(",", 1)[0]
            source = next(str(m["source"]) for m in mounts if m["target"] == target)
            words[index] = word.split(",src=", 1)[0] + f",src={source},dst=" + word.split(",dst=", 1)[1]
    for mount in mounts:  # the placeholders the launcher made for its session, and removed after it
        path = Path(str(mount["source"]))
        if not path.exists():
            folder = any(path.as_posix().endswith("/" + e.rstrip("/")) for e in READ_ONLY if e.endswith("/"))
            path.mkdir() if folder or path.name == ".git" else path.touch()
    return words


def timed(cmd: list[str], env: dict[str, str], *, expect: int = 0) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, check=False, capture_output=True)
    elapsed = time.perf_counter() - started
    if done.returncode != expect:
        raise SystemExit(f"{cmd[:3]} exited {done.returncode}, expected {expect}: {done.stderr.decode()[-500:]}")
    return elapsed


def measure(
    host: str, digest: str, pub: Path, work: Path, runs: int, baseline: tuple[list[str], dict[str, str]] | None
) -> dict[str, list[float]]:
    """Every series, interleaved run by run; the image is already in the engine by digest."""
    pinned = f"{host}/terminai/sandbox@{digest}"
    base_env = {"PATH": os.environ["PATH"], "TERMINAI_SANDBOX": "docker"}
    tag_ref = f"{host}/terminai/sandbox:0.1.0"
    args_tag = ["run", "--image", tag_ref, "--key", str(pub), "--", "true"]
    args_pinned = ["run", "--image", f"{tag_ref}@{digest}", "--key", str(pub), "--", "true"]
    launchers = {"": ([CLI], {})}
    if baseline is not None:
        launchers["base_"] = baseline
    envs = {}
    for prefix, (command, extra) in launchers.items():
        home = work / f"{prefix}warm"
        home.mkdir()
        envs[prefix] = {**base_env, **extra, "HOME": str(home)}
        timed([*command, *args_tag], envs[prefix])  # the first verification, which fills the cache
    ledger = work / "warm" / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    record = next(json.loads(line) for line in ledger.read_text().splitlines() if '"event": "run"' in line)
    hardened = unstaged(record["argv"], record.get("mounts", []))
    name = hardened[hardened.index("--name") + 1]
    refused_env = {"DOCKER_HOST": f"unix://{work}/absent.sock"}
    gvisor_env = {**envs[""], "TERMINAI_SANDBOX_RUNTIME": "runsc"}
    timed([CLI, *args_pinned], gvisor_env)
    no_engine_cli = work / "no-engine-cli"
    no_engine_cli.mkdir()
    (no_engine_cli / "docker").symlink_to(shutil.which("true") or "/bin/true")
    names = ("baseline", "floor", "cold", "python", "runsc_baseline", "runsc_pinned")
    series: dict[str, list[float]] = {k: [] for k in names}
    cold_home = work / "cold"
    for run in range(runs):
        series["baseline"].append(timed(["docker", "run", "--rm", "--network", "none", pinned, "true"], base_env))
        fresh = f"{name}-{run}"
        series["floor"].append(timed([a.replace(name, fresh) for a in hardened], base_env))
        for prefix, (command, _) in launchers.items():
            env = envs[prefix]
            series.setdefault(f"{prefix}pinned", []).append(timed([*command, *args_pinned], env))
            series.setdefault(f"{prefix}tag", []).append(timed([*command, *args_tag], env))
            series.setdefault(f"{prefix}refused", []).append(
                timed([*command, *args_pinned], {**env, **refused_env}, expect=4)
            )
            own_env = {**env, "PATH": f"{no_engine_cli}{os.pathsep}{env['PATH']}"}
            wall, cpu = cpu_timed([*command, *args_pinned], own_env)
            series.setdefault(f"{prefix}own", []).append(wall)
            series.setdefault(f"{prefix}own_cpu", []).append(cpu)
        shutil.rmtree(cold_home, ignore_errors=True)
        cold_home.mkdir()
        series["cold"].append(timed([CLI, *args_tag], {**base_env, "HOME": str(cold_home)}))
        series["python"].append(timed([sys.executable, "-c", "pass"], base_env))
        plain_runsc = ["docker", "run", "--rm", "--runtime", "runsc", "--network", "none", pinned, "true"]
        series["runsc_baseline"].append(timed(plain_runsc, base_env))
        series["runsc_pinned"].append(timed([CLI, *args_pinned], gvisor_env))
    return series


def cpu_timed(cmd: list[str], env: dict[str, str], *, expect: int = 0) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run; CPU time is what other load blurs least."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(cmd, env, expect=expect)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def launcher_only(runs: int, ref: str | None) -> int:
    """The launcher's own cost: a pinned launch refused at step 1, this tree (and ``ref``) interleaved."""
    with tempfile.TemporaryDirectory(prefix="bench-launcher-") as tmp:
        work = Path(tmp)
        launchers = {"this tree": ([CLI], {})}
        if ref:
            launchers[ref] = baseline_launcher(ref, work)
        (work / "k.pub").write_text("not read: step 1 refuses first\n")
        pinned = "127.0.0.1:5000/terminai/sandbox:0.1.0@sha256:" + "a" * 64
        args = ["run", "--image", pinned, "--key", str(work / "k.pub"), "--", "true"]
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(work),
            "TERMINAI_SANDBOX": "docker",
            "DOCKER_HOST": f"unix://{work}/absent.sock",
        }
        series: dict[str, list[tuple[float, float]]] = {name: [] for name in [*launchers, "python -c pass"]}
        for _ in range(runs):
            for name, (command, extra) in launchers.items():
                series[name].append(cpu_timed([*command, *args], {**env, **extra}, expect=4))
            series["python -c pass"].append(cpu_timed([sys.executable, "-c", "pass"], env))
    print(f"launch refused at step 1, {runs} interleaved runs; medians (p25-p75)")
    for name, values in series.items():
        walls, cpus = sorted(v[0] for v in values), sorted(v[1] for v in values)
        quart = len(values) // 4
        print(
            f"{name:>16}: wall {statistics.median(walls) * 1000:6.1f} ms ({walls[quart] * 1000:.0f}-"
            f"{walls[-quart - 1] * 1000:.0f})  CPU {statistics.median(cpus) * 1000:6.1f} ms "
            f"({cpus[quart] * 1000:.0f}-{cpus[-quart - 1] * 1000:.0f})"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--baseline-ref", help="also measure the launcher of this git commit, interleaved")
    parser.add_argument("--launcher-only", action="store_true", help="only the launcher refused at step 1")
    args = parser.parse_args()
    if args.launcher_only:
        return launcher_only(args.runs, args.baseline_ref)
    subprocess.run([sys.executable, str(Path(__file__).parents[1] / "scripts" / "ensure-engine")], check=True)
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        work = Path(tmp)
        # The sessions' working directory (and its placeholders): not the checkout, and beside
        # the launchers' HOMEs under work/, never holding them (step 0 refuses that).
        (work / "project").mkdir()
        os.chdir(work / "project")
        result = build_image(BuildOptions(output_dir=work / "out", load=False))
        with loopback_registry(work / "registry") as registry:
            client = RegistryClient(registry.host)
            digest = client.push_layout(result.oci_layout, "terminai/sandbox", tag="0.1.0").digest
            key = keys.generate()
            sign.sign(client, "terminai/sandbox", digest, key, docker_reference=f"{registry.host}/terminai/sandbox")
            (work / "k.pub").write_bytes(keys.public_pem(key))
            pinned = f"{registry.host}/terminai/sandbox@{digest}"
            subprocess.run(["docker", "pull", pinned], check=True, capture_output=True)
            try:
                baseline = baseline_launcher(args.baseline_ref, work) if args.baseline_ref else None
                series = measure(registry.host, digest, work / "k.pub", work, args.runs, baseline)
            finally:
                # Each run's registry has a new port: leave no reference to it in the engine.
                subprocess.run(["docker", "rmi", pinned], check=False, capture_output=True)
    m = {k: statistics.median(v) for k, v in series.items()}
    b = m["baseline"]
    print(f"plain docker run --rm --network none IMAGE true : {b * 1000:7.0f} ms (median of {args.runs})")
    print(
        f"hardened docker run (the launcher's argv) alone  : {m['floor'] * 1000:7.0f} ms  ratio {m['floor'] / b:.2f}x"
    )
    print(
        f"terminai-sandbox run, warm cache, REPO:TAG@sha256: {m['pinned'] * 1000:7.0f} ms  ratio {m['pinned'] / b:.2f}x"
    )
    print(f"terminai-sandbox run, warm cache, REPO:TAG       : {m['tag'] * 1000:7.0f} ms  ratio {m['tag'] / b:.2f}x")
    print(
        f"terminai-sandbox run, first verification         : {m['cold'] * 1000:7.0f} ms  "
        f"+{(m['cold'] - m['tag']) * 1000:.0f} ms over warm (REPO:TAG)"
    )
    print(f"launcher alone, refused at step 1 (no engine)    : {m['refused'] * 1000:7.0f} ms")
    print(
        f"the launcher's own part of a warm start (docker=true): {m['own'] * 1000:5.0f} ms wall, "
        f"{m['own_cpu'] * 1000:.1f} ms CPU"
    )
    print(f"for scale: python -c pass                        : {m['python'] * 1000:7.0f} ms")
    if args.baseline_ref:
        print(f"-- the launcher of {args.baseline_ref}, same run:")
        for key, label in (("pinned", "warm cache, REPO:TAG@sha256"), ("tag", "warm cache, REPO:TAG       ")):
            old = m[f"base_{key}"]
            print(
                f"terminai-sandbox run, {label}: {old * 1000:7.0f} ms  ratio {old / b:.2f}x  "
                f"(this tree {(m[key] - old) * 1000:+.0f} ms)"
            )
        old = m["base_refused"]
        print(
            f"launcher alone, refused at step 1 (no engine)    : {old * 1000:7.0f} ms  "
            f"(this tree {(m['refused'] - old) * 1000:+.0f} ms)"
        )
        print(
            f"the launcher's own part of a warm start (docker=true): {m['base_own'] * 1000:5.0f} ms wall, "
            f"{m['base_own_cpu'] * 1000:.1f} ms CPU  (this tree {(m['own'] - m['base_own']) * 1000:+.0f} ms wall, "
            f"{(m['own_cpu'] - m['base_own_cpu']) * 1000:+.1f} ms CPU)"
        )
    g = m["runsc_baseline"]
    print(
        f"plain docker run --runtime runsc ... IMAGE true  : {g * 1000:7.0f} ms  ratio {g / b:.2f}x "
        "(gVisor against runc)"
    )
    print(
        f"terminai-sandbox run, runsc, warm, REPO:TAG@sha256: {m['runsc_pinned'] * 1000:7.0f} ms  "
        f"ratio {m['runsc_pinned'] / g:.2f}x over plain runsc, {m['runsc_pinned'] / m['pinned']:.2f}x over runc"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
