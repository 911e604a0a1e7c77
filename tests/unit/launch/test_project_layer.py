"""The project Dockerfile is hostile input: read no-follow, parsed, held to what adds files only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terminai_sandbox.errors import LaunchError
from terminai_sandbox.launch.project import (
    DERIVED_LABEL,
    check_dockerfile,
    config_problems,
    layer_problems,
    read_dockerfile,
)

HEAD = "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
USER = "10001:10001"
WHERE = Path("/p/.terminai/sandbox.Dockerfile")


def _check(text: str) -> None:
    check_dockerfile(text, WHERE, base_user=USER)


@pytest.mark.parametrize(
    "text",
    [
        HEAD,
        "ARG BASE_IMAGE\nfrom $BASE_IMAGE\n",
        HEAD + "RUN echo a \\\n  && echo b\nCOPY src/ /workspace/src/\nADD data.tar /data/\n",
        HEAD + "ENV FOO=bar LANGUAGE_MODEL=x\nENV PLAIN value\nARG VERSION=1\nWORKDIR /workspace\n",
        HEAD + 'LABEL org.example.team="red" other=1\nEXPOSE 8080\nRUN ["echo", "json form"]\n',
        HEAD + f"USER root\nRUN apt-get install -y ./local.deb\nUSER {USER}\n",
        HEAD + "COPY --chown=10001:10001 notes /workspace/notes\n",
        HEAD + "# a comment, not a directive\nRUN true\n",
        HEAD + "ENV A=1\nENV B=${A}-x C=$A\nLABEL v=${A}\n",
    ],
)
def test_ordinary_project_layers_pass(text: str) -> None:
    _check(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (HEAD + "USER root\n", "the last USER is 'root'"),
        (HEAD + "user 0\n", "the last USER is '0'"),
        (HEAD + "ENTRYPOINT []\n", "line 3: ENTRYPOINT is refused"),
        (HEAD + 'CMD ["sh"]\n', "CMD is refused"),
        (HEAD + "HEALTHCHECK NONE\n", "HEALTHCHECK is refused"),
        (HEAD + 'SHELL ["/bin/evil"]\n', "SHELL is refused"),
        (HEAD + "ONBUILD RUN id\n", "ONBUILD is refused"),
        (HEAD + "VOLUME /data\n", "VOLUME is refused"),
        (HEAD + "STOPSIGNAL 9\n", "STOPSIGNAL is refused"),
        (HEAD + "FROBNICATE x\n", "FROBNICATE is refused"),
        ("ARG BASE_IMAGE\nFROM ${BASE_IMAGE} AS v\nFROM scratch\nCOPY --from=v / /\n", "must be exactly FROM"),
        (HEAD + "FROM scratch\n", "a second FROM is refused"),
        ("FROM debian:bookworm\n", "must be exactly FROM"),
        ("ARG BASE_IMAGE\nFROM --platform=linux/arm64 ${BASE_IMAGE}\n", "must be exactly FROM"),
        ("ARG OTHER\nFROM ${BASE_IMAGE}\n", "ARG before FROM is refused"),
        ("RUN id\n", "RUN before FROM is refused"),
        ("ARG BASE_IMAGE\n", "found no FROM"),
        (HEAD + "COPY --from=busybox /bin/sh /sh\n", "COPY --from=busybox is refused"),
        (HEAD + "COPY --chmod=4755 x /x\n", "--chmod=4755 is refused"),
        (HEAD + "ADD --link x /x\n", "--link is refused"),
        (HEAD + "ADD https://example.com/x /x\n", "ADD from https://example.com/x is refused"),
        (HEAD + "ADD git@github.com:a/b.git /b\n", "is refused"),
        (HEAD + "RUN --mount=type=bind,from=img,target=/m cat /m/x\n", "RUN --mount=type=bind"),
        (HEAD + "RUN --network=host curl x\n", "RUN --network=host is refused"),
        (HEAD + "RUN <<EOF\nid\nEOF\n", "heredoc"),
        (HEAD + "ENV PATH=/workspace/bin:/usr/bin\n", "ENV PATH is refused"),
        (HEAD + "ENV LD_PRELOAD /workspace/x.so\n", "ENV LD_PRELOAD is refused"),
        (HEAD + "ENV A=1 pythonpath=/workspace\n", "ENV pythonpath is refused"),
        (HEAD + "LABEL dev.terminai.verified=sha256:x\n", "LABEL dev.terminai.verified is refused"),
        (HEAD + f"LABEL DEV.TERMINAI.{DERIVED_LABEL[13:]}=x\n", "is refused"),
        ("# syntax=docker/dockerfile:1\n" + HEAD, "parser directive"),
        ("# escape=`\n" + HEAD, "parser directive"),
        ("#check=skip=all\n" + HEAD, "parser directive"),
        # read as the builder reads them (tests/integration/launch/test_dockerfile_oracle.py)
        (HEAD + "ENV N=PYTHON\nENV ${N}PATH=/x\n", "a variable in the name of ENV is refused"),
        (HEAD + "ENV $N /x\n", "a variable in the name of ENV is refused"),
        (HEAD + "ARG P=dev.terminai\nLABEL ${P}.x=1\n", "a variable in the name of LABEL is refused"),
        (HEAD + "ARG U=root\nUSER $U\n", "a variable in the user of USER is refused"),
        (HEAD + "ENV A=1\u00a0PYTHONPATH=/x\n", "line 3: the space character U+00A0 is refused"),
        (HEAD + "ENV A=1\x0cPYTHONPATH=/x\n", "line 3: the space character U+000C is refused"),
        (HEAD + "ENV A=1\x0bPYTHONPATH=/x\n", "the space character U+000B is refused"),
        (HEAD + "ENV A=1 \\", "ends in a line continuation"),
    ],
)
def test_what_a_project_layer_may_not_do_is_refused_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(LaunchError, match=None) as caught:
        _check(text)
    assert message in caught.value.message, caught.value.message
    assert str(WHERE) in caught.value.message and caught.value.hint


def _project(tmp_path: Path) -> Path:
    (tmp_path / ".terminai").mkdir()
    return tmp_path


def test_the_dockerfile_is_read_not_followed(tmp_path: Path) -> None:
    project = _project(tmp_path)
    dockerfile = project / ".terminai" / "sandbox.Dockerfile"
    dockerfile.write_text(HEAD)
    assert read_dockerfile(project) == HEAD.encode()
    dockerfile.unlink()
    os.symlink("/etc/shadow", dockerfile)
    with pytest.raises(LaunchError, match="cannot be read without following links"):
        read_dockerfile(project)
    dockerfile.unlink()
    os.mkfifo(dockerfile)
    with pytest.raises(LaunchError, match="must be a regular file of at most 1 MiB"):
        read_dockerfile(project)
    dockerfile.unlink()
    dockerfile.write_bytes(b"#" * (2 << 20))
    with pytest.raises(LaunchError, match="at most 1 MiB"):
        read_dockerfile(project)
    dockerfile.unlink()
    (project / ".terminai").rmdir()
    (project / "elsewhere").mkdir()
    (project / "elsewhere" / "sandbox.Dockerfile").write_text(HEAD + "USER root\n")
    os.symlink(project / "elsewhere", project / ".terminai")
    with pytest.raises(LaunchError, match=r"\.terminai is not a folder of the project"):
        read_dockerfile(project)


BASE = {
    "RootFS": {"Layers": ["sha256:a", "sha256:b"]},
    "Config": {
        "User": USER,
        "Entrypoint": ["/usr/local/bin/terminai-entrypoint"],
        "Cmd": ["python3"],
        "Env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"],
        "Labels": {"dev.terminai.contract.version": "1.0.0", "org.x": "y"},
    },
}


def _derived(**config: object) -> dict[str, object]:
    labels = {**BASE["Config"]["Labels"], DERIVED_LABEL: "sha256:d", "dev.terminai.project": "/p"}  # type: ignore[index]
    return {
        "RootFS": {"Layers": ["sha256:a", "sha256:b", "sha256:c"]},
        "Config": {**BASE["Config"], "Labels": labels, **config},  # type: ignore[dict-item]
    }


def test_a_derived_image_that_only_adds_passes() -> None:
    assert config_problems(BASE, _derived(Env=["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "FOO=bar"])) == []


@pytest.mark.parametrize(
    ("derived", "message"),
    [
        ({"RootFS": {"Layers": ["sha256:x", "sha256:c"]}, "Config": BASE["Config"]}, "do not start with"),
        (_derived(User="0"), "its User is '0'"),
        (_derived(Entrypoint=[]), "its Entrypoint"),
        (_derived(Cmd=["sh"]), "its Cmd"),
        (_derived(Healthcheck={"Test": ["NONE"]}), "its Healthcheck"),
        (_derived(Env=["PATH=/workspace/bin", "LANG=C.UTF-8"]), "reserved variable PATH"),
        (_derived(Env=["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONPATH=/w"]), "reserved variable PYTHONPATH"),
        (_derived(Labels={"dev.terminai.contract.version": "9.0.0"}), "dev.terminai.* labels differ"),
    ],
)
def test_a_derived_image_that_changes_what_was_verified_is_refused(derived: dict[str, object], message: str) -> None:
    problems = config_problems(BASE, derived)
    assert any(message in p for p in problems), problems


def test_layers_that_add_privilege_or_replace_the_toolset_are_refused() -> None:
    site = "usr/local/lib/python3.13/dist-packages"
    members = [
        ("opt/tool/run", 0o755, "file", False),
        ("workspace/data/", 0o755, "other", False),
        ("usr/local/bin/sudo-ish", 0o4755, "file", False),
        ("usr/local/bin/g", 0o2755, "file", False),
        ("usr/local/bin/caps", 0o755, "file", True),
        ("dev/sda", 0o600, "device", False),
        (f"{site}/terminai_apts/health.py", 0o644, "file", False),
        (f"{site}/terminai_apts/.wh.health.py", 0o644, "file", False),
        (f"{site}/evil.pth", 0o644, "file", False),
        ("usr/lib/python3/dist-packages/sitecustomize.py", 0o644, "file", False),
        ("usr/bin/python3.13", 0o755, "file", False),
        ("etc/ld.so.preload", 0o644, "file", False),
        ("usr/local/bin/terminai-entrypoint", 0o755, "file", False),
    ]
    problems = layer_problems(members)
    assert len(problems) == len(members) - 2, problems
    assert not any("/opt/tool/run" in p or "/workspace/data" in p for p in problems)
