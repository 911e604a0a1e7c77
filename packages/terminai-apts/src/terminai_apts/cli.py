"""``terminai-apts``: the in-image command line (argparse keeps the image small).

Sub-commands are contributed by the parts that own them; each module listed in
``_COMMAND_MODULES`` exposes ``register(subparsers)`` and sets ``func`` on its parsers.
``func(args) -> int`` returns the exit code. Errors become exit codes only here, through
:func:`terminai_apts.boundary.guarded` (docs/EXIT_CODES.md lists them).

This module also holds the conventions every command shares: ``help``, ``version`` and
``completion`` sub-commands, ``-q``/``-v``, ``cleanup`` (the governed cleanup tool, also
``python -m terminai_apts.action.cleanup``), numbers checked before any command sees them,
and option values that start with a dash (``--since -5d``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from terminai_apts import boundary, params
from terminai_apts._version import __version__
from terminai_apts.console import command_word
from terminai_apts.errors import JournalError, MemoryStoreError

_COMMAND_MODULES = (
    "terminai_apts.executor.host.cli",
    "terminai_apts.memory.cli",
    "terminai_apts.evolution.cli",
)
# The executor's commands, which agents start once per program: their parser is built
# without importing the memory and evolution modules (a test holds this to ``register``).
EXECUTOR_COMMANDS = frozenset({"exec", "repl", "exec-audit"})

EXIT_CODES_EPILOG = """\
exit codes (shared with terminai-sandbox, docs/EXIT_CODES.md):
  0 success   1 failed (code refused or failed, proposal rejected, check failed)
  2 usage error   3 a file or directory cannot be used (missing, directory, read-only, full, not UTF-8)
  20 cleanup refused   21 approval required   22 journal unreadable   23 integrity broken
  24 memory store error   25 read-only violation   26 executor unavailable
  27 evolution refused   28 contract violated   130 interrupted (Ctrl-C)   141 stdout closed
  143 terminated (SIGTERM; cleaned up as for Ctrl-C)
every failure prints one 'error:' line and a 'hint:' line; with --json also one JSON object on stdout
"""

# Bounds of the numeric options, by destination: (smallest, largest). A value outside is a
# usage error before any command runs (nan, inf, 1e308 and negative counts never reach one).
_FLOAT_BOUNDS: dict[str, tuple[float, float]] = {
    "timeout": (0.001, 1e6),
    "min_confidence": (0.0, 1.0),
}
_INT_BOUNDS: dict[str, tuple[int, int]] = {
    "limit": (1, 10**9),
    "max_results": (1, 10**9),
    "memory_mb": (1, 10**7),
    "max_output": (1, 2**40),
    "scan_limit": (1, 10**9),
    "offset": (0, 2**62),
    "id": (0, 2**62),
    "version": (0, 2**62),
}
_DEFAULT_FLOAT = (0.0, 1e9)
_DEFAULT_INT = (0, 2**62)

_MEMORY_QUERIES = ("search", "grep", "find", "filter", "count", "get", "summarize")
_JOURNAL_WRITES = ("decide", "posture", "append", "goals", "context", "checkpoint", "read")
_EVOLVE = ("propose", "approve", "reject", "status", "history", "rollback", "verify")
# The path arguments by command and destination, as argument types (terminai_apts.params):
# each is refused for what it is (empty, a FIFO, a directory where a file is read, ...)
# while the command line is parsed. A memory index may be a journal directory; a store and
# a journal are directories a command may create (a journal refuses what is not one with its
# family's code, 22); an audit log's directory is created.
_PATHS: dict[tuple[str, str], Callable[[], params.Typed]] = {
    **{(cmd, "db"): lambda: params.InputPath("--db", want="any", error=MemoryStoreError) for cmd in ("exec", "repl")},
    **{(cmd, "audit"): lambda: params.OutputPath("--audit", parent=False) for cmd in ("exec", "repl")},
    ("exec-audit", "path"): lambda: params.InputPath("PATH"),
    **{
        (f"memory {cmd}", "db"): lambda: params.InputPath("DB", want="any", error=MemoryStoreError)
        for cmd in _MEMORY_QUERIES
    },
    ("memory index", "db"): lambda: params.InputPath("DB", want="any"),
    ("memory index", "journal"): lambda: params.InputPath(
        "--journal", want="dir", error=JournalError, words_files=True
    ),
    ("memory index", "archive"): lambda: params.InputPath("--archive", error=MemoryStoreError),
    **{
        (f"memory {cmd}", "journal"): lambda: params.InputPath(
            "JOURNAL", want="dir", error=JournalError, words_files=True
        )
        for cmd in ("verify", "compact", *(f"journal {w}" for w in _JOURNAL_WRITES))
    },
    **{(f"memory journal {cmd}", "set"): lambda: params.InputPath("--set", stdin=True) for cmd in ("goals", "context")},
    ("memory journal checkpoint", "key"): lambda: params.InputPath("--key"),
    ("memory journal checkpoint", "out"): lambda: params.OutputPath("--out"),
    **{(f"evolve {cmd}", "store"): lambda: params.InputPath("--store", want="dir") for cmd in _EVOLVE},
    **{(f"evolve {cmd}", "hmac_key_file"): lambda: params.InputPath("--hmac-key-file") for cmd in _EVOLVE},
    ("evolve propose", "code"): lambda: params.InputPath("CODE", stdin=True),
    ("evolve propose", "tests"): lambda: params.InputPath("--tests"),
}


def _parsers(parser: argparse.ArgumentParser) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    """Every parser in the tree with its command path (the root's is [])."""
    todo: list[tuple[list[str], argparse.ArgumentParser]] = [([], parser)]
    while todo:
        path, current = todo.pop(0)
        yield path, current
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [([*path, name], sub) for name, sub in action.choices.items()]


# Help for the arguments the sub-command modules leave undocumented, by destination.
_DEFAULT_HELP = {
    "json": "print one JSON object",
    "path": "the file to read",
    "query": "words to search for",
    "pattern": "regular expression (RE2 syntax)",
    "substring": "text to find, case-insensitive",
    "tags": "comma-separated tags that must all be present",
    "limit": "at most this many results",
    "order": "result order",
    "source": "only records from this source",
    "kind": "only records of this kind",
    "min_confidence": "only records with at least this confidence (0 to 1)",
    "id": "the record id",
    "max_results": "at most this many matches in the digest",
}


def _harden(parser: argparse.ArgumentParser) -> None:
    """Give every argument of every sub-command its type from :mod:`terminai_apts.params`: numbers
    bounded (see ``_FLOAT_BOUNDS``), choices refused with a hint, paths (``_PATHS``) checked
    for what they are; fill missing help."""
    for path, current in _parsers(parser):
        for action in current._actions:
            if not action.help and action.dest in _DEFAULT_HELP:
                action.help = _DEFAULT_HELP[action.dest]
            name = action.option_strings[-1] if action.option_strings else (action.metavar or action.dest.upper())
            if action.type in (float, int):
                kind = action.type
                low, high = (
                    _FLOAT_BOUNDS.get(action.dest, _DEFAULT_FLOAT)
                    if kind is float
                    else _INT_BOUNDS.get(action.dest, _DEFAULT_INT)
                )
                action.type = params.Number(str(name), kind, low, high)
            elif action.choices and action.type is None and not isinstance(action, argparse._SubParsersAction):
                action.type = params.Choice(str(name), tuple(str(c) for c in action.choices))
            elif (" ".join(path), action.dest) in _PATHS:
                action.type = _PATHS[" ".join(path), action.dest]()


def _completion(args: argparse.Namespace) -> int:
    print(completion_script(build_parser(), args.shell))
    return 0


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """A static completion script for ``shell`` (bash, zsh or fish): commands and options."""
    table: dict[str, list[str]] = {}
    for steps, current in _parsers(parser):
        words = [s for a in current._actions for s in a.option_strings]
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                words += list(action.choices)
        table[" ".join(steps)] = sorted(set(words))
    if shell == "fish":
        lines = ["# terminai-apts completion for fish: terminai-apts completion fish | source"]
        for path, words in table.items():
            test = f"__fish_seen_subcommand_from {path.split()[-1]}" if path else "__fish_use_subcommand"
            for word in words:
                if word.startswith("--"):
                    lines.append(f"complete -c terminai-apts -n '{test}' -l {word[2:]}")
                elif word.startswith("-"):
                    lines.append(f"complete -c terminai-apts -n '{test}' -s {word[1:]}")
                else:
                    lines.append(f"complete -c terminai-apts -n '{test}' -f -a {word}")
        return "\n".join(lines)
    cases = "\n".join(f'        "{path}") words="{" ".join(words)}" ;;' for path, words in table.items())
    body = f"""_terminai_apts() {{
    local cur path="" words="" w
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        case "$w" in -*) ;; *) [[ -n "$path" ]] && path="$path $w" || path="$w" ;; esac
    done
    while :; do
        case "$path" in
{cases}
        *) if [[ "$path" == *" "* ]]; then path="${{path% *}}"; elif [[ -n "$path" ]]; then path=""; else break; fi
           continue ;;
        esac
        break
    done
    COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}}
complete -o default -F _terminai_apts terminai-apts"""
    if shell == "zsh":
        return "# terminai-apts completion for zsh: source <(terminai-apts completion zsh)\n" + (
            "autoload -U +X bashcompinit && bashcompinit\n" + body
        )
    return "# terminai-apts completion for bash: source <(terminai-apts completion bash)\n" + body


def _version(args: argparse.Namespace) -> int:
    if args.json:
        print(f'{{"ok": true, "version": "{__version__}"}}')
    else:
        print(f"terminai-apts {__version__}")
    return 0


def _cleanup(args: argparse.Namespace) -> int:
    from terminai_apts.action import cleanup  # noqa: PLC0415  (its own parser, its own help)

    return cleanup.run(args.cleanup_args, prog="terminai-apts cleanup")


def build_parser(modules: Sequence[str] = _COMMAND_MODULES) -> argparse.ArgumentParser:
    """The whole tree, or with ``modules`` only those modules' commands (and the built-in ones)."""
    parser = boundary.ArgumentParser(
        prog="terminai-apts",
        description="T-APTS: the sandbox toolset (restricted executor, memory, evolution, cleanup).",
        epilog=EXIT_CODES_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"terminai-apts {__version__}")
    noise = parser.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", action="store_true", help="print only results and errors")
    noise.add_argument("-v", "--verbose", action="store_true", help="also print the traceback of an unexpected failure")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(subparsers)
    clean = subparsers.add_parser(
        "cleanup",
        help="plan (and with an approver apply) a cleanup of a downloads folder",
        add_help=False,
        prefix_chars="\0",  # every argument, --help included, goes to the cleanup tool's own parser
    )
    clean.add_argument(
        "cleanup_args", nargs=argparse.REMAINDER, help="arguments of the cleanup tool (see cleanup --help)"
    )
    clean.set_defaults(func=_cleanup)
    helper = subparsers.add_parser("help", help="show the help of terminai-apts or of one command")
    helper.add_argument("topic", nargs="*", help="the command (and sub-command) to explain")
    helper.set_defaults(func=lambda args: _help(parser, args.topic))
    version = subparsers.add_parser("version", help="print the version")
    version.add_argument("--json", action="store_true", help="print the version as one JSON object")
    version.set_defaults(func=_version)
    complete = subparsers.add_parser("completion", help="print a shell completion script")
    complete.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")
    complete.set_defaults(func=_completion)
    _harden(parser)
    return parser


def _help(parser: argparse.ArgumentParser, topic: Sequence[str]) -> int:
    for path, current in _parsers(parser):
        if path == list(topic):
            current.print_help()
            return 0
    print(f"error: no command {' '.join(topic)!r}", file=sys.stderr)
    print("  hint: run 'terminai-apts help' for the list of commands", file=sys.stderr)
    return 2


def _join_dash_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--since -5d`` → ``--since=-5d``: an option that takes a value takes the next word,
    even when it starts with a dash (as click and getopt do), unless it is an option itself."""
    takes_value: set[str] = set()
    known: set[str] = set()
    for _, current in _parsers(parser):
        for action in current._actions:
            known.update(action.option_strings)
            if action.option_strings and action.nargs is None and action.const is None and not action.choices:
                takes_value.update(s for s in action.option_strings if s.startswith("--"))
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--" or (out and out[0] == "cleanup"):
            return out + argv[i:]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if word in takes_value and nxt is not None and nxt.startswith("-") and nxt not in known and nxt != "-":
            out.append(f"{word}={nxt}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def _outputs(args: argparse.Namespace) -> list[str]:
    """Files and directories the command may create: removed again if it fails (a failed
    command leaves nothing behind; an existing file is never removed). Plain strings:
    pathlib (with urllib.parse) is not loaded on `exec`'s path for this."""
    paths: list[str] = []
    if getattr(args, "audit", None):
        paths += [args.audit, f"{args.audit}.lock"]
    if getattr(args, "memory_command", None) == "index" and not os.path.isdir(args.db):
        paths += [args.db, f"{args.db}.lock"]
    if getattr(args, "evolve_command", None) == "propose":
        paths.append(args.store)
    return paths


def _remove(paths: Sequence[str]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):  # FileNotFoundError included: nothing to remove
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)


class _QuietStderr:
    """Under ``-q``: stderr passes errors, hints and warnings, and drops chatter."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner
        self._line = ""

    def write(self, text: str) -> int:
        self._line += text
        while "\n" in self._line:
            line, self._line = self._line.split("\n", 1)
            if line.lstrip().startswith(("error", "hint:", "warning", "usage:")) or ": error:" in line:
                self._inner.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    command = command_word(given)
    if command == "exec":
        # The run's zygote (a second interpreter) starts now, on the other core, while
        # this one parses and reads the program; a usage error only ends it unused. If it
        # cannot start, the command's own attempt fails the usual way (its exit code).
        from terminai_apts.executor.host import zygote_client  # noqa: PLC0415

        with contextlib.suppress(OSError):
            zygote_client.shared()
    parser = build_parser(("terminai_apts.executor.host.cli",) if command in EXECUTOR_COMMANDS else _COMMAND_MODULES)
    words = _join_dash_values(parser, given)
    state: dict[str, argparse.Namespace] = {}

    def body() -> int:
        args = parser.parse_args(words)
        state["args"] = args
        if args.verbose:
            os.environ["TERMINAI_DEBUG"] = "1"
        if args.quiet:
            sys.stderr = _QuietStderr(sys.stderr)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
            return 2
        fresh = [path for path in _outputs(args) if not os.path.lexists(path)]
        try:
            return int(func(args))
        except BaseException:
            _remove(fresh)
            raise

    def subject() -> str | None:
        args = state.get("args")
        return next((str(getattr(args, n)) for n in ("audit", "db", "store", "path") if getattr(args, n, None)), None)

    return boundary.guarded(
        body,
        as_json=lambda: bool(getattr(state.get("args"), "json", False)) or boundary.json_asked(words),
        subject=subject,
        exec_shape=lambda: (getattr(state.get("args"), "command", None) or command) in ("exec", "repl"),
    )


if __name__ == "__main__":
    sys.exit(main())
