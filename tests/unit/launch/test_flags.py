"""SANDBOX_FLAGS against the engines' own grammar: every documented flag is allowed or refused, in every spelling.

The oracle is the engines' documentation of ``run``: ``docker run --help`` and ``podman run
--help`` (pflag prints a type after each flag that takes a value, nothing after a
boolean). A copy of each is stored in tests/fixtures/engine-help/; when the CLI is
installed its live output is checked too, so a newer engine with new flags fails here
first. Spellings are generated from the grammar, never listed by hand.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch import flags
from terminai_sandbox.launch.config import parse_flags

HELP = Path(__file__).parents[2] / "fixtures" / "engine-help"
# pflag's usage line: "  -s, --name type   text" (type absent for booleans).
_LINE = re.compile(r"^\s+(?:-(?P<short>\S), )?--(?P<long>[A-Za-z0-9][\w-]*)(?: (?P<type>\S+))?(?:\s{2,}|\s*$)")


class Documented:
    """The flags one help text documents."""

    def __init__(self, text: str) -> None:
        self.takes_value: dict[str, bool] = {}
        self.shorts: dict[str, str] = {}
        for line in text.splitlines():
            match = _LINE.match(line)
            if match is None:
                continue
            name = "--" + match["long"]
            self.takes_value[name] = match["type"] is not None
            if match["short"]:
                self.shorts[match["short"]] = name


def _documented(engine: str) -> Documented:
    return Documented((HELP / f"{engine}-run.txt").read_text())


GRAMMARS = {"docker": flags.DOCKER_RUN, "podman": flags.PODMAN_RUN}


def _matches(grammar: flags.Grammar, documented: Documented) -> None:
    ours = {name: value for name, value in grammar.takes_value.items() if name not in grammar.undocumented}
    assert ours == documented.takes_value
    assert grammar.shorts == documented.shorts


@pytest.mark.parametrize("engine", sorted(GRAMMARS))
def test_the_grammar_is_the_documented_one(engine: str) -> None:
    documented = _documented(engine)
    assert len(documented.takes_value) > 90  # the help text was read, not an empty file
    _matches(GRAMMARS[engine], documented)


def test_podman_global_options_in_the_grammar_are_documented_with_the_same_arity() -> None:
    documented = Documented((HELP / "podman-global.txt").read_text())
    for name in flags.PODMAN_RUN.undocumented - {"--net"}:
        assert documented.takes_value[name] == flags.PODMAN_RUN.takes_value[name], name


def _unknown_to(binary: str, word: str) -> bool:
    """Whether ``binary run`` refuses ``word`` as an unknown flag (``--help`` stops it after parsing)."""
    result = subprocess.run([binary, "run", word, "--help"], capture_output=True, text=True, timeout=60, check=False)
    return "unknown flag" in result.stderr or "unknown shorthand flag" in result.stderr


@pytest.mark.parametrize("engine", sorted(GRAMMARS))
def test_the_grammar_is_the_installed_engines(engine: str) -> None:
    binary = shutil.which(engine)
    if binary is None:
        pytest.skip(f"{engine} is not installed: the stored help text is the oracle")
    live = subprocess.run([binary, "run", "--help"], capture_output=True, text=True, check=True, timeout=60).stdout
    grammar = GRAMMARS[engine]
    _matches(grammar, Documented(live))
    # The flags run accepts without listing them: each is a flag for the engine, and a flag
    # that is not (the control) is refused by it, so the probe can tell the two apart.
    assert _unknown_to(binary, "--no-such-flag=1")
    for name in sorted(grammar.undocumented):
        assert not _unknown_to(binary, f"{name}=1" if grammar.takes_value[name] else name), name
    if engine == "podman":  # the global options `podman run` does not accept stay out of the grammar
        others = Documented((HELP / "podman-global.txt").read_text()).takes_value.keys() - grammar.takes_value.keys()
        assert others and all(_unknown_to(binary, name) for name in others - {"--help"}), others


# -- spellings ------------------------------------------------------------------------------

# A value each flag might be given; the dangerous examples are the ones attacks use.
SAMPLE = {
    "--volume": "/:/host:ro",
    "--user": "0",
    "--read-only": "false",
    "--runtime": "runc",
    "--entrypoint": "/bin/sh",
    "--volumes-from": "other",
    "--network": "container:x",
    "--net": "host",
    "--cgroupns": "host",
    "--env-file": "/etc/shadow",
    "--security-opt": "seccomp=/tmp/allow-all.json",
    "--pids-limit": "-1",
    "--group-add": "0",
    "--cap-add": "SYS_ADMIN",
    "--device": "/dev/kvm",
    "--pid": "host",
    "--mount": "type=bind,src=/,dst=/host",
}
HARMLESS_SAMPLE = {
    "--env": "A=1",
    "--label": "team=red",
    "--workdir": "/work",
    "--hostname": "box",
    "--domainname": "example.org",
    "--tmpfs": "/mnt/scratch:rw,size=64m,mode=1777",
    "--stop-signal": "SIGINT",
    "--stop-timeout": "5",
    "--detach-keys": "ctrl-x",
}


def spellings(grammar: flags.Grammar, name: str, value: str | None) -> Iterator[list[str]]:
    """Every way pflag reads ``name`` (with ``value``), as SANDBOX_FLAGS words.

    ``value`` None for a boolean means "true"; a value for a boolean is written after '='.
    Short forms come alone and inside groups of combined short booleans (``-it``).
    """
    short = next((s for s, long in grammar.shorts.items() if long == name), None)
    group = "it" if short not in ("i", "t") else ""
    if grammar.takes_value[name]:
        assert value is not None
        yield [f"{name}={value}"]
        yield [name, value]
        if short:
            yield [f"-{short}", value]
            yield [f"-{short}{value}"]
            yield [f"-{short}={value}"]
            yield [f"-{group}{short}{value}"]
            yield [f"-{group}{short}", value]
            yield [f"-{group}{short}={value}"]
        return
    if value is None:
        yield [name]
        yield [f"{name}=true"]
        yield [f"{name}=1"]
        if short:
            yield [f"-{short}"]
            yield [f"-{group}{short}"]
            yield [f"-{short}{group}"]
            yield [f"-{group}{short}=True"]
        return
    for text in {value, value.upper(), value[:1]}:
        yield [f"{name}={text}"]
        if short:
            yield [f"-{short}={text}"]
            yield [f"-{group}{short}={text}"]


def _flags(words: list[str]) -> str:
    # Harmless neighbours on both sides: a refusal may not depend on where a flag stands.
    return shlex.join(["-e", "BEFORE=1", *words, "--workdir", "/after"])


def _cases(engine: str) -> Iterator[tuple[str, str, str | None]]:
    grammar = GRAMMARS[engine]
    for name in sorted(_documented(engine).takes_value):
        if name in flags.HARMLESS:
            continue
        value = SAMPLE.get(name, "x") if grammar.takes_value[name] else SAMPLE.get(name)
        yield engine, name, value


@pytest.mark.parametrize(("engine", "name", "value"), [case for engine in sorted(GRAMMARS) for case in _cases(engine)])
def test_every_documented_flag_off_the_list_is_refused_in_every_spelling(
    engine: str, name: str, value: str | None
) -> None:
    grammar = GRAMMARS[engine]
    short = next((f"-{s}" for s, long in grammar.shorts.items() if long == name), None)
    for words in spellings(grammar, name, value):
        with pytest.raises(ConfigError) as caught:
            parse_flags(_flags(words), engine=engine)
        assert caught.value.message.startswith("SANDBOX_FLAGS item"), (words, caught.value.message)
        assert f"is refused: {name}" in caught.value.message, (words, caught.value.message)
        assert f"--unsafe-allow-flag {name}" in caught.value.hint
        # --unsafe-allow-flag is the one way around, by either name of the flag; --env-host
        # would copy the host's PYTHONPATH, LD_* …, which no flag allowance lets through.
        for allowed in (name, short) if short else (name,):
            if name == "--env-host":
                with pytest.raises(ConfigError, match="copies the host's"):
                    parse_flags(_flags(words), engine=engine, allowed=[allowed])
                continue
            assert parse_flags(_flags(words), engine=engine, allowed=[allowed]), (words, allowed)


@pytest.mark.parametrize("engine", sorted(GRAMMARS))
def test_the_harmless_flags_pass_in_every_spelling(engine: str) -> None:
    grammar = GRAMMARS[engine]
    documented = _documented(engine)
    for name in flags.HARMLESS:
        if name not in documented.takes_value:
            continue  # --domainname: docker only
        value = HARMLESS_SAMPLE.get(name) if documented.takes_value[name] else None
        for words in spellings(grammar, name, value):
            assert parse_flags(_flags(words), engine=engine) == ("-e", "BEFORE=1", *words, "--workdir", "/after")


def test_the_issue_examples_are_refused_in_every_spelling() -> None:
    examples = [
        ("--volume", "/:/host:ro"),
        ("--user", "0"),
        ("--user", "root"),
        ("--read-only", "false"),
        ("--runtime", "runc"),
        ("--entrypoint", "/bin/true"),
        ("--volumes-from", "other"),
        ("--network", "container:x"),
        ("--cgroupns", "host"),
        ("--env-file", "/etc/shadow"),
        ("--security-opt", "seccomp=/tmp/profile.json"),
        ("--security-opt", "no-new-privileges=false"),
        ("--pids-limit", "-1"),
        ("--group-add", "0"),
    ]
    for engine, grammar in GRAMMARS.items():
        for name, value in examples:
            for words in spellings(grammar, name, value):
                with pytest.raises(ConfigError, match=f"is refused: {name}"):
                    parse_flags(_flags(words), engine=engine)
    # The issue's own spelling: a volume and a user, both attached.
    with pytest.raises(ConfigError, match=r"item '-v/:/host:ro' is refused: --volume"):
        parse_flags("-v/:/host:ro -u0")
    with pytest.raises(ConfigError, match=r"item '-u0' is refused: --user"):
        parse_flags("-it -u0")


def test_harmless_flags_with_harmful_values_are_refused() -> None:
    for bad, message in (
        ("--read-only=false", "undoes the launcher's --read-only"),
        ("--read-only=0", "undoes the launcher's --read-only"),
        ("--rm=F", "undoes the launcher's --rm"),
        ("--init=False", "undoes the launcher's --init"),
        ("--rm=no", "not a boolean"),
        ("--tmpfs /mnt/scratch", "needs size=N"),
        ("--tmpfs /mnt/scratch:size=2g", "needs size=N of at most 1024m"),
        ("--tmpfs /mnt/scratch:size=64m,suid", "'suid' is not one of"),
        ("--tmpfs /mnt/scratch:size=64m,dev", "'dev' is not one of"),
        ("--tmpfs /proc/sys:size=1m", "hides what the engine mounts"),
        ("--tmpfs //:size=1m", "would replace the whole image"),
        ("--tmpfs /./sys:size=1m", "hides what the engine mounts"),
        ("--tmpfs /usr/local/bin:size=1m", "holds the image's code"),
        ("--tmpfs /opt/x:size=1m", "outside the places"),
        ("--tmpfs scratch:size=1m", "absolute path"),
        ("--label dev.terminai.verified=sha256:0", "launcher's own"),
        ("-l dev.terminai.sandbox=0", "launcher's own"),
        ("-e GITHUB_TOKEN=abc", "secret GITHUB_TOKEN"),
        ("-eAWS_SECRET_ACCESS_KEY=abc", "secret AWS_SECRET_ACCESS_KEY"),
        ("-e -v/:/host", "not a variable name"),
        ("-w relative", "absolute path"),
        ("-h 'bad host'", "not a host name"),
        ("--stop-timeout 99999", "0-3600"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_flags(bad)


def test_positional_words_and_the_end_of_flags_are_refused() -> None:
    # The first word that is not a flag is the image for the engine: it would replace the verified one.
    for bad, message in (
        ("evil.example/root:latest", "not a flag: the engine would run it as the image"),
        ("-it evil/image", "not a flag"),
        ("--rm false", "item 'false' is not a flag"),  # a boolean never takes the next word
        ("-t 1", "item '1' is not a flag"),
        ("-- evil/image", "'--' ends the engine's flags"),
        ("--", "'--' ends the engine's flags"),
        ("-", "item '-' is not a flag"),
        ("''", "item '' is not a flag"),
    ):
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_flags(bad)


def test_unknown_and_malformed_flags_are_refused() -> None:
    for bad, message in (
        ("--no-such-flag", "is not a flag of 'docker run'"),
        ("-Z", "is not a flag of 'docker run'"),
        ("-itZ", "item '-itZ': -Z is not a flag"),
        ("-i=", "item '-i=': -= is not a flag"),
        ("---privileged", "not flag syntax"),
        ("--=x", "not flag syntax"),
        ("--ti", "'--ti' is not a flag of 'docker run'"),  # pflag never expands abbreviations
        ("-test.v", "is not a flag"),
        ("--domainname x", "is not a flag of 'podman run'"),  # docker has it, podman does not
        ("--env", "needs a value"),
        ("-e", "needs a value"),
        ("-ite", "needs a value"),
    ):
        engine = "podman" if "podman" in message else "docker"
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_flags(bad, engine=engine)
    with pytest.raises(ConfigError, match="--unsafe-allow-flag '--no-such' is not a flag of 'docker run'"):
        parse_flags("-it", allowed=["--no-such"])


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # pflag takes the next word as the value, whatever it looks like.
        (["-e", "-v/:/host"], [("--env", "-v/:/host")]),
        (["--env", "--privileged"], [("--env", "--privileged")]),
        (["-it"], [("--interactive", None), ("--tty", None)]),
        (["-itu0"], [("--interactive", None), ("--tty", None), ("--user", "0")]),
        (["-itu", "0"], [("--interactive", None), ("--tty", None), ("--user", "0")]),
        (["-u=0"], [("--user", "0")]),
        (["-u="], [("--user", "=")]),  # '=' attached right after the letter, with nothing after it, is the value
        (["-uroot"], [("--user", "root")]),
        (["-ti=false"], [("--tty", None), ("--interactive", "false")]),
        (["-h", "box"], [("--hostname", "box")]),  # -h is the host name, not help
        (["-v", "/a:/b", "-v/c:/d"], [("--volume", "/a:/b"), ("--volume", "/c:/d")]),
        (["--read-only=false"], [("--read-only", "false")]),
        (["--security-opt=no-new-privileges=false"], [("--security-opt", "no-new-privileges=false")]),
        (["-eA=1=2"], [("--env", "A=1=2")]),
        (["--net=host"], [("--net", "host")]),
    ],
)
def test_the_parser_reads_what_pflag_reads(words: list[str], expected: list[tuple[str, str | None]]) -> None:
    assert [(f.name, f.value) for f in flags.parse(words, flags.DOCKER_RUN)] == expected


def test_ordinary_knobs_still_work() -> None:
    assert parse_flags("-e A=1 -l team=red -w /work --tmpfs /mnt/scratch:size=64m -h box -it --init") == (
        "-e",
        "A=1",
        "-l",
        "team=red",
        "-w",
        "/work",
        "--tmpfs",
        "/mnt/scratch:size=64m",
        "-h",
        "box",
        "-it",
        "--init",
    )
    assert parse_flags("") == () and parse_flags("   ") == ()
    for bad in ("--a ; rm -rf /", "--a | cat", "'unbalanced"):
        with pytest.raises(ConfigError, match="SANDBOX_FLAGS"):
            parse_flags(bad)


def test_with_the_allowlist_off_the_issue_example_passes() -> None:
    # The guard switched off (each flag allowed by name): the words reach the engine as written.
    assert parse_flags("-v/:/host:ro -u0", allowed=["-v", "--user"]) == ("-v/:/host:ro", "-u0")


def test_a_refused_flag_is_a_failed_preflight_step_0_in_the_ledger(tmp_path: Path) -> None:
    from terminai_sandbox.launch import audit, preflight
    from terminai_sandbox.launch.config import load_launch_config

    ledger = audit.Ledger(tmp_path / "audit.jsonl")
    reported: list[preflight.StepResult] = []
    env = {"TERMINAI_SANDBOX": "docker", "SANDBOX_FLAGS": "-itu0"}
    with pytest.raises(ConfigError) as caught:
        preflight.configure(
            lambda: load_launch_config(env, image_flag="r.example/x:1", available=["docker"]),
            ledger=ledger,
            report=reported.append,
        )
    assert caught.value.message.startswith("preflight step 0 (configuration) refused: SANDBOX_FLAGS item '-itu0'")
    assert [(r.number, r.ok) for r in reported] == [(0, False)]
    (record,) = [json.loads(line) for line in ledger.path.read_text().splitlines()]
    assert (record["step"], record["ok"], record["name"]) == (0, False, "configuration")
    assert "--user" in record["detail"] and audit.verify(ledger.path) == 1
