#!/usr/bin/env python3
"""The egress proxy's cost: requests through it against the same requests direct, same run.

An origin (``python -m http.server`` on loopback) serves a 1 KiB and a 64 MiB file; the
proxy runs as its real process (``python -m terminai_apts.egress serve``, hardened,
ledger on) with a policy naming the origin's address literally. Measured, each direct and
through the proxy: 300 sequential small GETs (plain HTTP, one connection each, as the
proxy serves them), 300 CONNECT tunnels each carrying one small GET, and the 64 MiB
download; and the proxy's start (until it prints ``listening``) against ``python -c pass``.

    python benchmarks/egress_proxy.py [--requests 300]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from terminai_apts.egress.policy import parse_network_policy


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(port: int, path: str, *, via: int | None) -> int:
    """One GET on a fresh connection; the body's length."""
    with socket.create_connection(("127.0.0.1", via or port)) as conn:
        if via is None:
            conn.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        else:
            conn.sendall(f"GET http://127.0.0.1:{port}{path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        return _drain(conn)


def _tunnel(port: int, path: str, *, via: int | None) -> int:
    with socket.create_connection(("127.0.0.1", via or port)) as conn:
        if via is not None:
            conn.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            assert conn.recv(64).startswith(b"HTTP/1.1 200")
        conn.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        return _drain(conn)


def _drain(conn: socket.socket) -> int:
    total = 0
    while chunk := conn.recv(1 << 20):
        total += len(chunk)
    return total


def _timed(count: int, call: object) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-egress-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o755)
        (root / "www").mkdir()
        (root / "sock").mkdir()
        if os.geteuid() == 0:  # the proxy drops to nobody, who must be able to remove its socket
            shutil.chown(root / "sock", "nobody")
        (root / "www" / "small").write_bytes(b"x" * 1024)
        (root / "www" / "big").write_bytes(os.urandom(1 << 20) * 64)
        origin_port, proxy_port = _free_port(), _free_port()
        origin = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                "--directory",
                str(root / "www"),
                str(origin_port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        policy = parse_network_policy(f"allow:127.0.0.1:{origin_port}", source="bench")
        (root / "policy.json").write_text(json.dumps(policy.to_json()))
        argv = [
            sys.executable, "-m", "terminai_apts.egress", "serve",
            "--policy-json", str(root / "policy.json"), "--socket", str(root / "sock" / "proxy.sock"),
            "--ledger", str(root / "ledger.jsonl"), "--tcp-port", str(proxy_port),
        ]  # fmt: skip
        starts, baseline_starts = [], []
        try:
            for _ in range(5):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                baseline_starts.append(time.perf_counter() - started)
                started = time.perf_counter()
                proxy = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
                assert proxy.stdout is not None
                assert proxy.stdout.readline().startswith("listening")
                starts.append(time.perf_counter() - started)
                proxy.stdout.readline()
                if len(starts) < 5:
                    proxy.terminate()
                    proxy.wait(10)
            time.sleep(0.5)
            rows = []
            for name, call in (("plain HTTP GET, 1 KiB", _get), ("CONNECT tunnel + GET, 1 KiB", _tunnel)):
                direct = _timed(args.requests, lambda c=call: c(origin_port, "/small", via=None))
                through = _timed(args.requests, lambda c=call: c(origin_port, "/small", via=proxy_port))
                rows.append((name, statistics.median(direct), statistics.median(through)))
            for name, call in (("64 MiB download, plain HTTP", _get), ("64 MiB download, CONNECT", _tunnel)):
                direct = _timed(5, lambda c=call: c(origin_port, "/big", via=None))
                through = _timed(5, lambda c=call: c(origin_port, "/big", via=proxy_port))
                rows.append((name, min(direct), min(through)))
            proxy.terminate()
            proxy.wait(10)
            records = (root / "ledger.jsonl").read_text().count("\n")
        finally:
            origin.terminate()
            origin.wait(10)
        print(f"{'measurement':34} {'direct':>10} {'proxy':>10} {'ratio':>7}")
        base_start, proxy_start = statistics.median(baseline_starts), statistics.median(starts)
        print(
            f"{'process start (python -c pass)':34} {base_start * 1e3:8.1f}ms "
            f"{proxy_start * 1e3:8.1f}ms {proxy_start / base_start:6.2f}x"
        )
        for name, direct_s, proxy_s in rows:
            unit, scale = ("ms", 1e3)
            print(f"{name:34} {direct_s * scale:8.2f}{unit} {proxy_s * scale:8.2f}{unit} {proxy_s / direct_s:6.2f}x")
        big = 64 / min(r[2] for r in rows[2:])
        print(f"proxy throughput (best of the two 64 MiB runs): {big:.0f} MiB/s; ledger records: {records}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
