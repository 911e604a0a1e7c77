"""``terminai-apts``: the in-image command line (argparse keeps the image small).

Sub-commands are contributed by the parts that own them; each module listed in
``_COMMAND_MODULES`` exposes ``register(subparsers)`` and sets ``func`` on its parsers.
``func(args) -> int`` returns the exit code. Errors become exit codes only here.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from terminai_apts._version import __version__
from terminai_apts.errors import AptsError

_COMMAND_MODULES = (
    "terminai_apts.executor.cli",
    "terminai_apts.memory.cli",
    "terminai_apts.evolution.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="terminai-apts",
        description="T-APTS: the sandbox toolset (restricted executor, memory, evolution).",
    )
    parser.add_argument("--version", action="version", version=f"terminai-apts {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args))
    except AptsError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
