"""No Kubernetes object is printed or written holding a lone surrogate (non-UTF-8 argument bytes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.kube.hardening import SessionShape
from terminai_sandbox.kube.manifests import check_names
from terminai_sandbox.kube.render import to_json, to_yaml, write_dir

NOT_UTF8 = os.fsdecode(b"caf\xe9")  # a Latin-1 argument on a UTF-8 system


def _pod(*args: str) -> dict[str, object]:
    return {"kind": "Pod", "metadata": {"name": "s"}, "spec": {"containers": [{"name": "c", "args": list(args)}]}}


def test_yaml_would_carry_the_surrogate_as_an_escape_a_parser_turns_back_into_it() -> None:
    # Why the check exists: PyYAML emits "\uDCE9", which parses back to the lone surrogate.
    text = yaml.dump(_pod("sh", NOT_UTF8), Dumper=yaml.SafeDumper)
    assert "\\uDCE9" in text
    with pytest.raises(UnicodeEncodeError):
        str(yaml.safe_load(text)["spec"]["containers"][0]["args"][1]).encode("utf-8")


@pytest.mark.parametrize("render", [to_yaml, to_json])
def test_printing_refuses_a_lone_surrogate_naming_the_field(render: object) -> None:
    assert callable(render)
    with pytest.raises(ConfigError, match=r"Pod s\.spec\.containers\[0\]\.args\[1\] would hold text that is not valid"):
        render([_pod("sh", NOT_UTF8)])
    assert render([_pod("sh", "café")])  # valid text, non-ASCII included, is printed


def test_writing_refuses_before_any_file_is_written(tmp_path: Path) -> None:
    out = tmp_path / "objects"
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        write_dir([_pod("ok"), _pod("sh", NOT_UTF8)], out, as_json=False)
    assert not out.exists()


def test_the_command_is_refused_before_anything_is_verified() -> None:
    with pytest.raises(ConfigError, match=r"COMMAND argument 2 would hold text that is not valid UTF-8 \(\\udce9"):
        check_names(SessionShape(name="s", command=("echo", NOT_UTF8)), "ns")
    check_names(SessionShape(name="s", command=("echo", "café")), "ns")
