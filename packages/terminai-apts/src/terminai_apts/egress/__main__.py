"""``python -m terminai_apts.egress serve``: the proxy, as a host process the launcher starts
(``--socket PATH``) or as a cluster's proxy pod from the verified image (``--listen-port
PORT``, rendered by ``terminai-sandbox kube``; it then prints ``listening tcp 0.0.0.0:PORT``).

Prints ``listening PATH`` on stdout once it accepts connections (and, with the test-only
``--tcp-port``, a second line ``listening tcp 127.0.0.1:PORT``); stops on SIGTERM or
SIGINT, removing its socket, writing the last records, and exiting 0. A bad input is one
``error:`` line and a ``hint:`` line on stderr, exit 2 (command line) or 3 (a refused file).
"""

from __future__ import annotations

import argparse
import sys

from terminai_apts.egress.errors import ConfigError, EgressFault
from terminai_apts.egress.serve import ServeOptions, serve


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]  # exits, as argparse's does
        sys.stderr.write(f"error: {message}\n  hint: see 'python -m terminai_apts.egress serve --help'\n")
        raise SystemExit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m terminai_apts.egress", description="The allowlisting egress proxy.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("serve", help="serve one session's policy")
    run.add_argument("--policy-json", required=True, help="the policy, as NetworkPolicy.to_json() wrote it")
    run.add_argument("--socket", default=None, help="the Unix socket path to listen on (must not exist)")
    run.add_argument(
        "--listen-port",
        type=int,
        default=None,
        help="listen on this port of every address instead (a cluster proxy pod)",
    )
    run.add_argument("--ledger", required=True, help="the audit ledger to append one record per connection to")
    run.add_argument("--socket-mode", default="600", help="octal permission bits of the socket (default 600)")
    run.add_argument("--user", default=None, help="when started as root, serve as this user (default nobody)")
    run.add_argument("--hosts-file", default=None, help="resolve names from this file only (tests)")
    run.add_argument("--tcp-port", type=int, default=None, help="also listen on this loopback port (tests)")
    run.add_argument("--no-sni-check", action="store_true", help="do not check the ClientHello on port 443")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        try:
            mode = int(args.socket_mode, 8)
        except ValueError:
            raise ConfigError(
                f"--socket-mode {args.socket_mode!r} is not octal", hint="e.g. --socket-mode 660"
            ) from None
        options = ServeOptions(
            policy_json=args.policy_json,
            socket=args.socket,
            listen_port=args.listen_port,
            ledger=args.ledger,
            socket_mode=mode,
            user=args.user,
            hosts_file=args.hosts_file,
            tcp_port=args.tcp_port,
            sni_check=not args.no_sni_check,
        )
        return serve(options)
    except EgressFault as exc:
        sys.stderr.write(exc.render() + "\n")
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
