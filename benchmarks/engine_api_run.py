#!/usr/bin/env python3
"""What a session's container costs through the docker CLI against the same container through the API.

The launcher runs the session with ``docker run`` (a Go binary the launcher spawns: it
starts, pings the engine, creates, attaches, starts, waits for the removal). The question
this answers before that is changed: would creating, attaching and waiting through the
package's own client (:class:`terminai_sandbox.engine.client.DockerApi`, from the launcher
process that is already running) be faster, and by how much? N times each, interleaved:

* cli: ``docker run --rm -i --network none --name NAME IMAGE true`` (stdin from /dev/null),
  timed around the spawned process;
* api: the same container from this process: ``POST /containers/create`` (``AutoRemove``,
  ``NetworkMode none``, stdin open), ``attach`` (hijacked, in a thread, as the CLI does
  before it starts the container), ``start``, ``wait?condition=removed``, timed in-process
  from an open client (the launcher holds one after preflight);
* api+connect: the same with the client's connection made inside the timing (``/_ping``).

It also prints the CPU the launcher's side spends: the docker CLI process (its children's
rusage) against this process's own (the client and its threads); the engine's is neither.

    python benchmarks/engine_api_run.py IMAGE [--runs 21]

IMAGE is a local image (an id or a digest reference); nothing is pulled or removed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import threading
import time

from terminai_sandbox.engine.client import DockerApi
from terminai_sandbox.engine.transport import api_request, connect_socket, request_head

CPU: dict[str, list[float]] = {"cli": [], "api": []}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_run(image: str) -> float:
    name = f"engine-bench-cli-{os.urandom(4).hex()}"
    argv = ["docker", "run", "--rm", "-i", "--network", "none", "--name", name, image, "true"]
    cpu = _children_cpu()
    started = time.perf_counter()
    with open(os.devnull, "rb") as stdin:
        done = subprocess.run(argv, stdin=stdin, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    CPU["cli"].append(_children_cpu() - cpu)
    if done.returncode != 0:
        raise SystemExit(f"docker run exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return elapsed


def _attach(host: str, prefix: str, container: str, out: list[bytes]) -> None:
    """The hijacked attach stream, read to its end (the container's exit closes it)."""
    sock = connect_socket(host, 30)
    path = f"{prefix}/containers/{container}/attach?stream=1&stdin=1&stdout=1&stderr=1"
    sock.sendall(request_head("POST", path, "Connection: Upgrade\r\nUpgrade: tcp\r\n"))
    sock.shutdown(1)  # stdin: nothing, as from /dev/null
    while data := sock.recv(65536):
        out.append(data)
    sock.close()


def api_run(api: DockerApi, image: str) -> float:
    host, prefix = api.info.host, f"/v{api.info.api_version}"
    name = f"engine-bench-api-{os.urandom(4).hex()}"
    document = {
        "Image": image,
        "Cmd": ["true"],
        "OpenStdin": True,
        "StdinOnce": True,
        "AttachStdin": True,
        "AttachStdout": True,
        "AttachStderr": True,
        "HostConfig": {"NetworkMode": "none", "AutoRemove": True},
    }
    cpu = time.process_time()
    started = time.perf_counter()
    status, _, body = api_request(
        host, f"{prefix}/containers/create?name={name}", method="POST", body=json.dumps(document).encode()
    )
    if status != 201:
        raise SystemExit(f"create answered {status}: {body[:200]!r}")
    container = json.loads(body)["Id"]
    out: list[bytes] = []
    attached = threading.Thread(target=_attach, args=(host, prefix, container, out))
    attached.start()
    # The removal wait is asked before the start, as the CLI does, so the exit cannot be missed.
    waited: list[tuple[int, bytes]] = []
    waiter = threading.Thread(
        target=lambda: waited.append(
            api_request(
                host, f"{prefix}/containers/{container}/wait?condition=removed", method="POST", body=b"", timeout=60
            )[::2]
        )
    )
    waiter.start()
    status, _, body = api_request(host, f"{prefix}/containers/{container}/start", method="POST", body=b"")
    if status != 204:
        raise SystemExit(f"start answered {status}: {body[:200]!r}")
    waiter.join()
    attached.join()
    elapsed = time.perf_counter() - started
    CPU["api"].append(time.process_time() - cpu)
    code, answer = waited[0]
    if code != 200 or json.loads(answer).get("StatusCode") != 0:
        raise SystemExit(f"wait answered {code}: {answer[:200]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    api = DockerApi.connect(os.environ)
    series: dict[str, list[float]] = {"cli": [], "api": [], "api+connect": []}
    cli_run(args.image)  # warm the engine's caches for this image once
    api_run(api, args.image)
    for _ in range(args.runs):
        series["cli"].append(cli_run(args.image))
        series["api"].append(api_run(api, args.image))
        started = time.perf_counter()
        fresh = DockerApi.connect(os.environ)
        connect = time.perf_counter() - started
        series["api+connect"].append(connect + api_run(fresh, args.image))
    base = statistics.median(series["cli"])
    with open("/proc/loadavg") as handle:
        load = handle.read().split()[0]
    print(f"runs {args.runs}, load {load}, medians:")
    for label, values in series.items():
        median = statistics.median(values)
        print(f"  {label:12} {median * 1000:7.1f} ms  ({median / base:.2f}× cli)")
    for label, values in CPU.items():
        print(f"  CPU on the launcher's side, {label}: {statistics.median(values) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
