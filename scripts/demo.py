#!/usr/bin/env python3
"""`make demo`: the main job end to end, through the real supply chain and launcher.

1. make sure the host tools are installed (scripts/ensure-host-tools: docker.io,
   docker-registry, mmdebstrap, ...) and a container engine answers (scripts/ensure-engine);
2. create the local DEVELOPMENT signing key under .sandbox-dev/ (public password, never a
   release key: it only proves the pipeline on this machine);
3. start a throwaway OCI registry (Debian's docker-registry) on 127.0.0.1;
4. `terminai-sandbox release`: build, contracts, SBOM, push by digest, sign, attest;
5. `terminai-sandbox verify` the released tag against the development public key;
6. `terminai-sandbox run`: preflight (digest, signature, contract label) and a hardened
   session (--network none, read-only root, no capabilities) that runs the cleanup
   planner on a sample downloads folder mounted read-only, then prints the plan;
7. `terminai-sandbox audit verify` on the session's ledger; stop the registry.

Nothing in the sample folder is changed: the planner only plans. A step that fails stops
the demo with the step's own message (never a traceback) and a non-zero exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from terminai_sandbox.errors import SandboxError
from terminai_sandbox_dev.localregistry import loopback_registry

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CLI = str(BIN / "terminai-sandbox")
DEV_DIR = ROOT / ".sandbox-dev"
DEV_PASSWORD = "development-only"  # noqa: S105 (public on purpose: see .sandbox-dev/README)
NOW = "2026-11-21T12:00:00Z"
REPO = "terminai/sandbox"


def say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run(argv: list[str], env: dict[str, str], cwd: Path = ROOT, capture: bool = False) -> str:
    # Only stdout is captured: the launcher's preflight report (stderr) stays visible.
    done = subprocess.run(argv, env=env, cwd=cwd, check=False, text=True, stdout=subprocess.PIPE if capture else None)
    if done.returncode != 0:
        raise SystemExit(f"demo stopped: {' '.join(argv[:3])} ... exited {done.returncode}")
    return done.stdout if capture else ""


def main() -> int:
    try:
        return demo()
    except SandboxError as exc:
        print(f"demo stopped:\n{exc.render()}", file=sys.stderr)
        return exc.exit_code


def demo() -> int:
    env = {**os.environ, "COSIGN_PASSWORD": DEV_PASSWORD, "TERMINAI_SANDBOX": "docker"}
    env.pop("TERMINAI_SANDBOX_IMAGE", None)
    env.pop("GEMINI_SANDBOX_IMAGE", None)
    say("1. host tools and container engine")
    run([str(ROOT / "scripts" / "ensure-host-tools"), "demo"], {**env, "PYTHON": sys.executable})
    run([sys.executable, str(ROOT / "scripts" / "ensure-engine")], env)
    say("2. development signing key (.sandbox-dev/: DEVELOPMENT ONLY, never a release key)")
    run([CLI, "keygen", "--dev"], env)
    pub = DEV_DIR / "cosign.pub"
    with tempfile.TemporaryDirectory(prefix="sandbox-demo-") as tmp_name:
        tmp = Path(tmp_name)
        # The session's ledger and verification cache stay with the demo, not the user's.
        env["XDG_STATE_HOME"] = str(tmp / "state")
        say("3. loopback registry")
        with loopback_registry(tmp / "registry") as registry:
            host = registry.host
            print(f"registry at http://{host}")
            say("4. release: build, contracts, SBOM, push by digest, sign, attest")
            run([CLI, "release", "--push", f"{host}/{REPO}", "--key", str(DEV_DIR / "cosign.key"),
                 "--dist", str(tmp / "dist")], env)  # fmt: skip
            release = json.loads(next((tmp / "dist").glob("*/release.json")).read_text())
            tag = str(release["tag"])
            say(f"5. verify {tag}")
            run([CLI, "verify", tag, "--key", str(pub)], env)
            say("6. verified, hardened session: the cleanup planner on a read-only sample folder")
            downloads = tmp / "Downloads"
            run([sys.executable, str(ROOT / "examples" / "make_sample_downloads.py"), str(downloads), "--now", NOW],
                env)  # fmt: skip
            session = tmp / "session"
            session.mkdir()
            env["SANDBOX_MOUNTS"] = f"{downloads}:/data/Downloads:ro"
            out = run([CLI, "run", "--image", tag, "--key", str(pub), "--",
                       "python3", "-m", "apts.action.cleanup", "/data/Downloads", "--now", NOW],
                      env, cwd=session, capture=True)  # fmt: skip
            plan = json.loads(out)
            say("7. audit ledger")
            run([CLI, "audit", "verify"], env)
            # The registry goes away with the demo; so does the engine's reference to it.
            subprocess.run(["docker", "rmi", str(release["reference"])], check=False, capture_output=True)
    print(f"\ncleanup plan for the sample downloads folder ({plan['scanned']} objects), made inside the sandbox:")
    for entry in plan["entries"]:
        print(f"  {entry['label']:8} {entry['path']:40} {entry['reason']}")
    print("counts: " + ", ".join(f"{k}={v}" for k, v in sorted(plan["counts"].items())))
    print(f"image: {release['reference']} (signed, verified; contracts: {release['contracts']['summary']})")
    print("nothing was moved: apply needs '--apply --approved-by NAME' on a read-write mount")
    return 0


if __name__ == "__main__":
    sys.exit(main())
