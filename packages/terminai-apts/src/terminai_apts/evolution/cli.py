"""``terminai-apts evolve ...``: propose, approve, reject, inspect, roll back and verify a store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from terminai_apts.boundary import path_error
from terminai_apts.errors import IntegrityError, PathError, UsageError
from terminai_apts.evolution.orchestrator import EvolutionConfig, EvolutionOrchestrator
from terminai_apts.evolution.snapshots import RollbackManager, load_hmac_key


def _emit(args: argparse.Namespace, value: object, text: str) -> None:
    print(json.dumps(value, default=str) if args.json else text)


def _read(path: str, what: str) -> str:
    """The text of ``path`` (``-``: stdin); a path that is no readable UTF-8 file is a PathError (exit 3)."""
    name = "standard input" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
        else:
            if Path(path).exists() and not Path(path).is_file():
                raise PathError(f"{what} {path} is not a regular file", hint="pass a file, or '-' for stdin")
            data = Path(path).read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        raise path_error(exc) from None
    except UnicodeDecodeError as exc:
        raise PathError(
            f"{what} {name} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
            hint="save it as UTF-8 (iconv -t UTF-8)",
        ) from None
    if what == "proposal" and not text.strip():
        raise UsageError(f"the proposal {name} is empty", hint="pass the code to propose")
    return text


def _orchestrator(args: argparse.Namespace, config: EvolutionConfig | None = None) -> EvolutionOrchestrator:
    store = Path(args.store)
    # Only a proposal creates a store; inspecting one that is not there must not make it.
    if (config is None or store.exists()) and not store.is_dir():
        what = "does not exist" if not store.exists() else "is not a directory"
        raise PathError(f"evolution store {store} {what}", hint="pass the --store of an earlier 'evolve propose'")
    key = load_hmac_key(Path(args.hmac_key_file) if args.hmac_key_file else None)
    return EvolutionOrchestrator(store, config, rollback=RollbackManager(store, hmac_key=key))


def _propose(args: argparse.Namespace) -> int:
    config = EvolutionConfig(
        security_mode=args.mode,
        timeout_seconds=args.timeout,
        require_human_approval=not args.no_approval,
    )
    code = _read(args.code, "proposal")  # read first: a bad input leaves no store behind
    tests = _read(args.tests, "tests") if args.tests else None
    orch = _orchestrator(args, config)
    attempt = orch.evolve(code, tests=tests)
    _emit(args, attempt.to_json(), f"{attempt.attempt_id} {attempt.state.value} {attempt.reason}".rstrip())
    if attempt.state.value in ("PENDING_APPROVAL", "DEPLOYED"):
        return 0
    print(f"error: proposal {attempt.attempt_id} {attempt.state.value.lower()}: {attempt.reason}", file=sys.stderr)
    print(
        "  hint: fix what the reason names and propose again; 'terminai-apts evolve status' lists the attempts",
        file=sys.stderr,
    )
    return 1


def _approve(args: argparse.Namespace) -> int:
    attempt = _orchestrator(args).approve(args.attempt_id, args.approver)
    _emit(args, attempt.to_json(), f"{attempt.attempt_id} {attempt.state.value} v{attempt.deployed_version}")
    return 0


def _reject(args: argparse.Namespace) -> int:
    attempt = _orchestrator(args).reject(args.attempt_id, args.approver, args.reason)
    _emit(args, attempt.to_json(), f"{attempt.attempt_id} {attempt.state.value}")
    return 0


def _status(args: argparse.Namespace) -> int:
    orch = _orchestrator(args)
    rows = [{"attempt_id": a.attempt_id, "state": a.state.value, "reason": a.reason} for a in orch.attempts.values()]
    value = {"current_version": orch.rollback.current, "attempts": rows}
    text = f"current version: {orch.rollback.current}\n" + "\n".join(
        f"{r['attempt_id']} {r['state']} {r['reason']}".rstrip() for r in rows
    )
    _emit(args, value, text)
    return 0


def _history(args: argparse.Namespace) -> int:
    mgr = _orchestrator(args).rollback
    snaps = [{k: v for k, v in s.to_json().items() if k != "code"} for s in mgr.snapshots]
    text = "\n".join(
        f"v{s['version']} {str(s['sha256'])[:12]} parent={s['parent']} by {s['approver']}"
        + (" (current)" if s["version"] == mgr.current else "")
        for s in snaps
    )
    _emit(args, {"current_version": mgr.current, "snapshots": snaps}, text or "no versions")
    return 0


def _rollback(args: argparse.Namespace) -> int:
    orch = _orchestrator(args)
    orch.rollback_to(args.version, args.actor)
    _emit(args, {"current_version": orch.rollback.current}, f"current version: v{orch.rollback.current}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    # Loading already refuses a bad store; report that as a verification verdict, not a crash.
    try:
        _orchestrator(args)
    except IntegrityError as exc:
        _emit(args, {"ok": False, "problems": [exc.message]}, f"FAILED: {exc.message}")
        return 1
    _emit(args, {"ok": True, "problems": []}, "OK: every snapshot verifies")
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Attach ``evolve`` and its sub-commands."""
    evolve = subparsers.add_parser("evolve", help="governed code evolution")
    sub = evolve.add_subparsers(dest="evolve_command", required=True)

    def add(name: str, func: Any, help_text: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=help_text)
        p.add_argument("--store", required=True, help="evolution store directory")
        p.add_argument("--hmac-key-file", help="HMAC key file (or set TERMINAI_EVOLUTION_HMAC_KEY)")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(func=func)
        return p

    p = add("propose", _propose, "validate, test and evaluate a proposal")
    p.add_argument("code", help="file with the proposed code, or '-' for stdin")
    p.add_argument("--tests", help="file with test code run after the proposal")
    p.add_argument("--mode", default="high", choices=["standard", "high", "strict"], help="executor security mode")
    p.add_argument("--timeout", type=float, default=10.0, help="sandbox wall clock, seconds")
    p.add_argument("--no-approval", action="store_true", help="deploy without a human approval")
    for name, func in (("approve", _approve), ("reject", _reject)):
        p = add(name, func, f"{name} a pending attempt")
        p.add_argument("attempt_id", help="the attempt id 'evolve propose' printed")
        p.add_argument("--approver", required=True, help="who decides (recorded in the store)")
        if name == "reject":
            p.add_argument("--reason", default="rejected by approver", help="why (recorded in the store)")
    add("status", _status, "attempts and the current version")
    add("history", _history, "every deployed version")
    p = add("rollback", _rollback, "restore a verified earlier version")
    p.add_argument("version", type=int, help="the deployed version to restore")
    p.add_argument("--actor", default="cli", help="who rolls back (recorded in the store)")
    add("verify", _verify, "check every snapshot's hash (and HMAC)")
