"""The project-layer checks read a Dockerfile as the engine's builder reads it.

The oracle is the builder itself: every Dockerfile below that the checks accept is built by
``docker build`` (the classic builder the launcher pins, on ``scratch``, so only instructions
that need no shell are used), and the image config it made must set exactly the environment
names, label keys and user the checks read. A Dockerfile the checks refuse needs no build:
refusing is the safe answer. The inputs are what hand-written files hold, not what our own
writer makes: continuations with comments and blank lines inside, CRLF, tabs and other
spaces, lower-case instructions, quotes, the legacy ``ENV NAME value`` form, variables in
names, parser directives in every spelling.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from terminai_sandbox.errors import LaunchError
from terminai_sandbox.launch.project import check_dockerfile

pytestmark = [pytest.mark.integration]

HEAD = "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
USER = "sandbox"
# Bodies after HEAD (a few replace HEAD itself). Each is read by the checks and, if they
# accept it, by the builder.
BODIES = {
    "plain": "ENV A=1 B=2\nLABEL org.example.team=red\nUSER sandbox\n",
    "legacy ENV form": "ENV PLAIN a value with spaces\n",
    "legacy ENV, a reserved name": "ENV PYTHONPATH /x\n",
    "continuation": "ENV A=1 \\\n    B=2\n",
    "continuation with a comment inside": "ENV A=1 \\\n# USER root\n    B=2\n",
    "continuation with a blank line inside": "ENV A=1 \\\n\n    B=2\n",
    "continuation into an instruction word": "ENV A=1 \\\nUSER root\n",
    "spaces after the backslash": "ENV A=1 \\   \nUSER root\n",
    "CRLF": "ENV A=1\r\nUSER root\r\nUSER sandbox\r\n",
    "CRLF continuation": "ENV A=1 \\\r\n    PYTHONPATH=/x\r\n",
    "tab separators": "ENV\tPYTHONPATH=/x\n",
    "tab inside the value": "ENV A=1\tPYTHONPATH=/x\n",
    "no-break space": "ENV A=1\u00a0PYTHONPATH=/x\n",
    "vertical tab": "ENV A=1\x0bPYTHONPATH=/x\n",
    "form feed": "ENV A=1\x0cPYTHONPATH=/x\n",
    "lower-case instructions": "env A=1\nlabel x=y\nuser sandbox\n",
    "mixed-case instruction": "EnV LD_PRELOAD=/x.so\n",
    "leading spaces": "   ENV A=1\n\tLABEL x=y\n",
    "double-quoted value hiding a name": 'ENV A="1 PYTHONPATH=/x"\n',
    "escaped quote": 'ENV A="1\\" PYTHONPATH=/x"\n',
    "single-quoted value": "ENV A='1 PYTHONPATH=/x'\n",
    "quoted name": 'ENV "PYTHONPATH"=/x\n',
    "quoted label key": 'LABEL "dev.terminai.derived-from"=x\n',
    "single-quoted label key": "LABEL 'dev.terminai.x'=1\n",
    "label legacy form": "LABEL dev.terminai.x 1\n",
    "label with = in a quoted value": 'LABEL a="b=c d=e" f=g\n',
    "variable in an ENV name": "ENV N=PYTHON\nENV ${N}PATH=/x\n",
    "braced default in a name": "ENV ${N:-LD_PRE}LOAD=/x.so\n",
    "variable from an ARG": "ARG N=PYTHONPATH\nENV $N=/x\n",
    "variable in a label key": "ARG P=dev.terminai\nLABEL ${P}.x=1\n",
    "variable in USER": "ARG U=root\nUSER $U\n",
    "escaped dollar in a name": "ENV \\$N=1\n",
    "variables in values": "ENV A=1\nENV B=${A}-x C=$A\nLABEL v=${A}\n",
    "empty value": 'ENV A=""\nLABEL x=""\n',
    "json-looking ENV": 'ENV ["PYTHONPATH", "/x"]\n',
    "USER with a group": "USER sandbox:sandbox\n",
    "USER then back": "USER root\nUSER sandbox\n",
    "a comment line that looks like an instruction": "#USER root\n# ENV PYTHONPATH=/x\nENV A=1\n",
    "backslash at the end of the file": "ENV A=1 \\",
    "only a backslash on a line": "ENV A=1 \\\n\\\nUSER root\n",
    "escape directive": "# escape=`\n" + HEAD + "ENV A=1 `\nUSER root\n",
    "escape directive, spaced": "#  EsCaPe = `\n" + HEAD + "ENV A=1 `\nUSER root\n",
    "escape directive after a blank line": "\n# escape=`\n" + HEAD + "ENV A=1 `\nUSER root\n",
    "escape directive after a comment": "# hello\n# escape=`\n" + HEAD + "ENV A=1 `\nUSER root\n",
    "escape directive, leading space": " # escape=`\n" + HEAD + "ENV A=1 `\nUSER root\n",
    "directive after FROM": HEAD + "# escape=`\nENV A=1 `\nUSER root\n",
    "BOM": "\ufeff" + HEAD + "ENV A=1\n",
}


def _text(name: str) -> str:
    """The whole file: a body that holds its own FROM (after a directive, say) is one already."""
    body = BODIES[name]
    return body if "FROM ${BASE_IMAGE}" in body else HEAD + body


def _built_config(tmp: Path, text: str) -> dict[str, object] | None:
    """The config ``docker build`` made of ``text`` (None: the builder refused it)."""
    (tmp / "Dockerfile").write_bytes(text.encode())
    tag = f"terminai-oracle/dockerfile:{uuid.uuid4().hex}"  # unique: workers run side by side
    done = subprocess.run(
        ["docker", "build", "--quiet", "--network=none", "--pull=false", "--build-arg", "BASE_IMAGE=scratch",
         "--tag", tag, str(tmp)],
        capture_output=True, text=True, timeout=120, check=False, env={"PATH": "/usr/bin:/bin", "DOCKER_BUILDKIT": "0"},
    )  # fmt: skip
    if done.returncode != 0:
        return None
    try:
        shown = subprocess.run(
            ["docker", "image", "inspect", tag, "--format", "{{json .Config}}"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return dict(json.loads(shown.stdout))
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def docker(engine: object) -> str:
    found = shutil.which("docker")
    assert found, "the oracle needs the docker CLI (make engine installs it)"
    return found


@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_builder_sets_exactly_what_the_checks_read(docker: str, name: str, tmp_path: Path) -> None:
    text = _text(name)
    try:
        reading = check_dockerfile(text, tmp_path / "sandbox.Dockerfile", base_user=USER)
    except LaunchError:
        return  # refused before any build: nothing the builder reads can differ
    config = _built_config(tmp_path, text)
    if config is None:
        return  # the builder refuses it too
    built_env = [str(item).split("=", 1)[0] for item in (config.get("Env") or [])]
    built_env = [n for n in built_env if n != "PATH"]  # the builder's own default
    built_labels = sorted(dict(config.get("Labels") or {}))  # type: ignore[call-overload]
    assert built_env == [n for n in dict.fromkeys(reading.env) if n != "PATH"], (name, config)
    assert built_labels == sorted(set(reading.labels)), (name, config)
    assert (config.get("User") or None) == reading.user, (name, config)


def test_the_oracle_builds_what_the_checks_accept(docker: str, tmp_path: Path) -> None:
    """The comparison above is not vacuous: most ordinary files are accepted and built."""
    accepted = 0
    for name in ("plain", "continuation", "lower-case instructions", "variables in values", "USER then back"):
        text = _text(name)
        check_dockerfile(text, tmp_path / "sandbox.Dockerfile", base_user=USER)
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        assert _built_config(folder, text) is not None, name
        accepted += 1
    assert accepted == 5
