"""`terminai-apts exec`, `terminai-apts repl` and `terminai-apts exec-audit`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from terminai_apts.errors import PathError, UsageError
from terminai_apts.executor.frames import MAX_ERROR_CHARS
from terminai_apts.executor.host.run import ExecutionResult, ExecutorSession, execute
from terminai_apts.executor.policy import MAX_SOURCE_BYTES, MODES, ApiSpec, SandboxConfig, thermal_spec
from terminai_apts.executor.python_layer.output import fit_escaped, json_line, terminal_line


def _limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=MODES, default="high", help="security mode")
    parser.add_argument("--timeout", type=float, default=30.0, help="wall-clock seconds, validation included")
    parser.add_argument("--memory-mb", type=int, default=256, help="memory for user code")
    parser.add_argument("--max-output", type=int, default=1_000_000, help="output bytes printed, escapes too")
    parser.add_argument("--db", help="memory database injected read-only as `thermal`")
    parser.add_argument("--audit", help="append a hash-chained audit line to this file")
    parser.add_argument("--caller", default="cli", help="caller id for the audit log")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _config(args: argparse.Namespace) -> SandboxConfig:
    return SandboxConfig(
        security_mode=args.mode,
        timeout_seconds=args.timeout,
        max_memory_mb=args.memory_mb,
        max_output_bytes=args.max_output,
        audit_path=args.audit,
        caller_id=args.caller,
    )


def _api(args: argparse.Namespace) -> ApiSpec | None:
    if not args.db:
        return None
    if not os.path.exists(args.db):
        raise UsageError(f"memory database {args.db} not found", hint="check --db PATH")
    # Checked here, in the host process: inside the child an unopenable index could only
    # fail every program with "injected API unavailable". (Imported here: the memory
    # store's modules are not needed by a run without one.)
    from terminai_apts.memory.preflight import check_openable  # noqa: PLC0415

    check_openable(args.db)
    return thermal_spec(os.path.abspath(args.db))


def _human(result: ExecutionResult, max_output: int) -> None:
    # As UTF-8 bytes, whatever the locale: the run capped them, and an encoding of
    # stdout's own could only grow them (or fail on them).
    sys.stdout.flush()
    sys.stdout.buffer.write(result.stdout.encode("utf-8", "backslashreplace"))
    sys.stdout.buffer.flush()
    if result.output_truncated:  # said on stderr, so the output itself stays what the program printed
        print(
            f"note: output truncated to the first {max_output} bytes (raise --max-output to see more)",
            file=sys.stderr,
        )
    if not result.success:
        where = f" (line {result.line})" if result.line else ""
        # The program chose the message: one line, its control characters escaped, capped.
        print(f"error{where}: {terminal_line(result.error or '', MAX_ERROR_CHARS)}", file=sys.stderr)
        if result.hint:
            print(f"  hint: {result.hint}", file=sys.stderr)


def _json(result: ExecutionResult, max_output: int) -> str:
    """The result as the one line printed, its ``stdout`` within ``max_output`` bytes and
    its ``error`` within ``MAX_ERROR_CHARS`` bytes as printed (escapes included)."""
    stdout, cut = fit_escaped(result.stdout, max_output)
    error, _ = fit_escaped(result.error, MAX_ERROR_CHARS) if result.error else (result.error, False)
    if cut or error != result.error:
        result = dataclasses.replace(
            result, stdout=stdout, error=error, output_truncated=result.output_truncated or cut
        )
    return json_line(result.to_json())


def _read_code() -> str:
    """The program on stdin, read no further than one byte past the size limit: an
    oversized program is refused (by validation, on that prefix) without reading,
    decoding or scanning the rest."""
    data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= MAX_SOURCE_BYTES - 3:  # a character cut by the size limit: validation refuses the size
            return data[: exc.start].decode("utf-8") + "\ufffd"
        raise PathError(
            f"the program on standard input is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
            hint="pipe UTF-8 text in (convert it with iconv -t UTF-8)",
        ) from None


# One JSON request line: the code's limit with room for JSON escapes (six bytes at most
# per byte of code) and the envelope.
_MAX_LINE = 6 * MAX_SOURCE_BYTES + 1024
_OVERSIZED = "\x00oversized"


def _read_line() -> str | None:
    """The next request line (None at the end of input); a longer one is skipped to its
    end without being kept, and answered as oversized."""
    line = sys.stdin.buffer.readline(_MAX_LINE)
    if not line:
        return None
    if len(line) == _MAX_LINE and not line.endswith(b"\n"):
        while True:
            rest = sys.stdin.buffer.readline(1 << 20)
            if not rest or rest.endswith(b"\n"):
                return _OVERSIZED
    return line.decode("utf-8", "replace")


def _exec(args: argparse.Namespace) -> int:
    result = execute(_read_code(), _config(args), _api(args))
    if args.json:
        print(_json(result, args.max_output))
    else:
        _human(result, args.max_output)
    return 0 if result.success else 1


def _usage_line(error: str, hint: str) -> None:
    """The reply to a line that is not a cell; the session goes on."""
    print(json_line({"success": False, "error": error, "error_type": "UsageError", "hint": hint}), flush=True)


def _repl(args: argparse.Namespace) -> int:
    """JSON lines ({"code": ...} in, one result per line out) or an interactive prompt."""
    with ExecutorSession(_config(args), _api(args)) as session:
        if args.json:
            while True:
                line = _read_line()
                if line is None:
                    return 0
                if not line.strip():
                    continue
                if line == _OVERSIZED:
                    _usage_line(f"a cell is at most {MAX_SOURCE_BYTES} bytes of code", "split it into several cells")
                    continue
                try:
                    request: Any = json.loads(line)
                    code = str(request["code"])
                except (ValueError, KeyError, TypeError, RecursionError, MemoryError):
                    # nested too deep for the decoder, too, is a malformed line: the session goes on
                    _usage_line('expected {"code": ...}', 'send one JSON object per line, such as {"code": "print(1)"}')
                    continue
                result = session.run(code)
                print(_json(result, args.max_output), flush=True)
                if session.closed:
                    return 1
        print("terminai-apts repl: end a cell with an empty line; Ctrl-D quits.", file=sys.stderr)
        while True:
            lines: list[str] = []
            try:
                while True:
                    lines.append(input("... " if lines else ">>> "))
                    if not lines[-1].strip():
                        break
            except EOFError:
                if not any(line.strip() for line in lines):
                    return 0
                lines.append("")  # the input ended inside a cell: run it, then stop at the next prompt
            result = session.run("\n".join(lines))
            _human(result, args.max_output)
            if session.closed:
                print("session ended", file=sys.stderr)
                return 1


def _verify(args: argparse.Namespace) -> int:
    from terminai_apts.executor.host import audit  # noqa: PLC0415 - only this command reads the log

    count = audit.verify(args.path)
    print(json.dumps({"ok": True, "entries": count}) if args.json else f"ok: {count} entries")
    return 0


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Attach `exec`, `repl` and `exec-audit`."""
    run = subparsers.add_parser("exec", help="run Python from stdin in the restricted executor")
    _limits(run)
    run.set_defaults(func=_exec)
    repl = subparsers.add_parser("repl", help="a restricted session (cells share variables)")
    _limits(repl)
    repl.set_defaults(func=_repl)
    verify = subparsers.add_parser("exec-audit", help="verify the executor's audit log chain")
    verify.add_argument("path")
    verify.add_argument("--json", action="store_true")
    verify.set_defaults(func=_verify)
