"""How long a command lasts against servers that are slow on every answer, or that never answer whole.

Two console scripts side by side in the same run (this tree's and a baseline's, e.g. main's
checkout), each against the same servers on 127.0.0.1:

* ``verify --attestation`` of a signed, attested image on Debian's docker-registry behind a
  relay that holds every answer back ``--pause`` seconds (inside the per-request bound
  ``--request-seconds``; the command deadline ``--command-seconds``);
* ``preflight --image REGISTRY/REPO:TAG`` against a registry that trickles (the engine
  resolves the tag), with the defaults and with ``--request-seconds``;
* ``sign --keyless`` with a GitHub Actions token endpoint that never answers.

Usage: .venv/bin/python benchmarks/command_deadlines.py --baseline /work/main/.venv/bin/terminai-sandbox
Needs docker-registry and a Docker engine (for preflight's step 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from terminai_sandbox.secret import Secret
from terminai_sandbox.signing.formats import keys
from terminai_sandbox_dev.localregistry import loopback_registry

from tests.fixtures.hostile import STALL, TRICKLE, always, http, serving
from tests.fixtures.oci import write_layout
from tests.fixtures.slow_proxy import slow_relay

THIS = str(Path(sys.executable).with_name("terminai-sandbox"))
CAP = 300.0  # a run still going after this is stopped and reported as such


def run(cli: str, args: list[str], env: dict[str, str]) -> tuple[str, float]:
    started = time.monotonic()
    try:
        done = subprocess.run([cli, *args], capture_output=True, text=True, env=env, timeout=CAP, check=False)
    except subprocess.TimeoutExpired:
        return f"still running at {CAP:g} s", CAP
    return f"exit {done.returncode}", time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", required=True, help="the baseline's terminai-sandbox console script")
    parser.add_argument("--pause", type=float, default=2.0)
    parser.add_argument("--request-seconds", type=float, default=3.0)
    parser.add_argument("--command-seconds", type=float, default=10.0)
    options = parser.parse_args()
    clis = {"this tree": THIS, "baseline": options.baseline}
    root = Path(tempfile.mkdtemp(prefix="bounds-bench-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TERMINAI_", "GITHUB_", "ACTIONS_"))}
    env = {**base, "HOME": str(root), "COSIGN_PASSWORD": "bench"}
    key = keys.generate()
    (root / "cosign.pub").write_bytes(keys.public_pem(key))
    (root / "cosign.key").write_bytes(keys.encrypt_private(key, Secret(b"bench")))
    (root / "sbom.json").write_text(json.dumps({"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1}))
    write_layout(root / "layout", config=b'{"architecture":"amd64","os":"linux"}', layers=[b"bench\n" * 100])
    with loopback_registry(root / "registry") as registry, slow_relay(registry.host, 0.0) as relay:
        done = subprocess.run(
            [THIS, "push", str(root / "layout"), f"{relay.host}/bench/x:1.0.0", "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        ref = f"{relay.host}/bench/x@{json.loads(done.stdout)['digest']}"
        subprocess.run([THIS, "sign", ref, "--key", str(root / "cosign.key")], env=env, check=True)
        attest = [THIS, "attest", ref, "--predicate", str(root / "sbom.json"), "--key", str(root / "cosign.key")]
        subprocess.run(attest, env=env, check=True)
        relay.pause = options.pause
        slow_env = {
            **env,
            "TERMINAI_REGISTRY_TIMEOUT": str(options.request_seconds),
            "TERMINAI_COMMAND_TIMEOUT": str(options.command_seconds),
        }
        print(
            f"verify --attestation, every answer {options.pause:g} s late "
            f"(each request's bound {options.request_seconds:g} s, the command's {options.command_seconds:g} s):"
        )
        for name, cli in clis.items():
            relay.exchanges = 0
            verify = ["verify", ref, "--key", str(root / "cosign.pub"), "--attestation", "cyclonedx"]
            outcome, seconds = run(cli, verify, slow_env)
            print(f"  {name:10} {seconds:6.1f} s  {outcome}  ({relay.exchanges} requests relayed)")
    with serving(always(TRICKLE, http(200, b"{}"))) as trickling:
        args = ["preflight", "--image", f"{trickling.host}/bench/x:1.0.0", "--key", str(root / "cosign.pub")]
        for label, knob in (("defaults", {}), (f"TERMINAI_REGISTRY_TIMEOUT={options.request_seconds:g}", slow_env)):
            print(f"preflight --image REGISTRY/REPO:1.0.0, a registry sending a byte every 0.5 s ({label}):")
            for name, cli in clis.items():
                outcome, seconds = run(cli, args, {**env, **knob})
                print(f"  {name:10} {seconds:6.1f} s  {outcome}")
    with serving(always(STALL)) as token:
        github = {
            **env,
            "GITHUB_ACTIONS": "true",
            "ACTIONS_ID_TOKEN_REQUEST_URL": f"http://{token.host}/token",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "bench",
            "TERMINAI_COMMAND_TIMEOUT": str(options.command_seconds),
        }
        print(f"sign --keyless, a token endpoint that never answers (the command's {options.command_seconds:g} s):")
        for name, cli in clis.items():
            outcome, seconds = run(cli, ["sign", f"127.0.0.1:9/bench/x@sha256:{'b' * 64}", "--keyless"], github)
            print(f"  {name:10} {seconds:6.1f} s  {outcome}")


if __name__ == "__main__":
    main()
