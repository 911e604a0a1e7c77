"""Reserved environment names: no knob sets what the loader, Python or the shells read at start."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import itertools
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch.config import load_launch_config, parse_env, parse_flags
from terminai_sandbox.launch.reserved_env import reserved

ROOT = Path(__file__).resolve().parents[3]
ATTACKS = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONWARNINGS", "PYTHONSAFEPATH",
           "PYTHON_HISTORY", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "BASH_FUNC_ls", "ENV",
           "PATH", "IFS", "CDPATH", "SHELLOPTS", "BASHOPTS", "PS4", "GLOBIGNORE", "HOME", "TERMINAI_BASHRC",
           "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "MALLOC_CHECK_",
           "GLIBC_TUNABLES")  # fmt: skip
ORDINARY = ("FOO", "LANG", "TZ", "TERM", "TMPDIR", "EDITOR", "MY_PATH_HINT")


def _script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("reserved_env_script", str(ROOT / "scripts" / "reserved-env"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _cases(name: str) -> list[str]:
    """The name as written, and case variants of it."""
    return sorted({name, name.lower(), name.capitalize(), name.swapcase()})


def _env_spellings(item: str) -> list[list[str]]:
    """Every way docker's (and podman's) pflag grammar reads ``item`` as a --env value."""
    return [
        ["-e", item],
        [f"-e{item}"],
        [f"-e={item}"],
        ["--env", item],
        [f"--env={item}"],
        ["-it", "-e", item],
        [f"-ite{item}"],
        ["-e", "FOO=1", "-e", item],  # repeated: the reserved one second
        ["-e", item, "--env", "FOO=1"],
        ["--env=FOO=1", f"--env={item}", "-e", "BAR=2"],
    ]


def test_the_host_pythons_documented_variables_are_all_reserved() -> None:
    script = _script()
    pythons = {sys.executable, *(p for p in (shutil.which("python3"),) if p)}
    for python in sorted(pythons):
        names = script.python_names(script.help_env(python))
        assert "PYTHONPATH" in names, python
        for name in sorted(names):
            assert reserved(name), (python, name)
            with pytest.raises(ConfigError, match=f"SANDBOX_ENV sets {name},"):
                parse_env(f"{name}=x", inherited={})


@pytest.mark.parametrize("name", ATTACKS)
def test_sandbox_env_refuses_reserved_names_in_every_case(name: str) -> None:
    for written in _cases(name):
        for item in (f"{written}=/workspace", written):
            with pytest.raises(ConfigError) as caught:
                parse_env(f"FOO=1,{item}", inherited={written: "x"})
            assert f"SANDBOX_ENV sets {written}," in caught.value.message
            assert f"--unsafe-allow-env {written}" in caught.value.hint


@pytest.mark.parametrize("engine", ["docker", "podman"])
@pytest.mark.parametrize("name", ATTACKS)
def test_sandbox_flags_env_refuses_reserved_names_in_every_spelling(engine: str, name: str) -> None:
    for written, value in itertools.product(_cases(name), ("=/workspace", "", "=")):
        for words in _env_spellings(written + value):
            with pytest.raises(ConfigError) as caught:
                parse_flags(" ".join(words), engine=engine)
            assert f"sets {written}," in caught.value.message, words
            assert caught.value.message.startswith("SANDBOX_FLAGS"), words
            assert f"--unsafe-allow-env {written}" in caught.value.hint
            # --unsafe-allow-flag --env does not let a reserved name through ...
            with pytest.raises(ConfigError, match=f"sets {written},"):
                parse_flags(" ".join(words), engine=engine, allowed=["--env"])
            # ... only --unsafe-allow-env does.
            assert parse_flags(" ".join(words), engine=engine, allowed_env=frozenset({written.upper()}))


@pytest.mark.parametrize("engine", ["docker", "podman"])
def test_ordinary_variables_still_pass(engine: str) -> None:
    for name in ORDINARY:
        assert parse_env(f"{name}=bar", inherited={})[0].name == name
        for words in _env_spellings(f"{name}=bar"):
            assert parse_flags(" ".join(words), engine=engine) == tuple(words)


def test_exported_function_names_are_refused_either_way() -> None:
    # bash imports BASH_FUNC_name%% as a function; '%' is no variable name for either knob.
    for knob in (
        lambda: parse_env("BASH_FUNC_ls%%=() { id; }", inherited={}),
        lambda: parse_flags("-e BASH_FUNC_ls%%=x"),
    ):
        with pytest.raises(ConfigError):
            knob()


def test_podman_env_merge_and_unsetenv_name_reserved_variables() -> None:
    for words in (["--env-merge", "PATH=/w:${PATH}"], ["--unsetenv", "PATH"], ["--unsetenv=LD_PRELOAD"]):
        with pytest.raises(ConfigError, match="sets"):
            parse_flags(" ".join(words), engine="podman", allowed=[words[0].partition("=")[0]])
    with pytest.raises(ConfigError, match="copies the host's"):
        parse_flags("--env-host", engine="podman", allowed=["--env-host"])


def _env_file(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "vars.env"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(path)


@pytest.mark.parametrize(
    "text",
    [
        "PYTHONPATH=/workspace\n",
        "FOO=1\nLD_PRELOAD=/workspace/x.so\n",
        "# comment\n\n   PATH=/workspace/bin\n",
        "\ufeffBASH_ENV=/workspace/rc\n",
        "\tpythonpath=/workspace\n",
        "PYTHONHOME\n",  # bare: inherited from the launcher's environment
        "FOO=a=b\r\nPATH=/w\r\n",
    ],
)
@pytest.mark.parametrize("spelling", ["--env-file {}", "--env-file={}"])
def test_env_file_with_a_reserved_name_is_refused(tmp_path: Path, text: str, spelling: str) -> None:
    flag = spelling.format(_env_file(tmp_path, text))
    for engine in ("docker", "podman"):
        with pytest.raises(ConfigError) as caught:
            parse_flags(flag, engine=engine, allowed=["--env-file"])
        assert "(file " in caught.value.message and "--unsafe-allow-env" in caught.value.hint


def test_env_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    for path, why in (
        (tmp_path / "missing.env", "cannot read"),
        (tmp_path, "not a regular file"),
        (Path(_env_file(tmp_path, b"\xff\xfe=1\n")), "not UTF-8"),
    ):
        with pytest.raises(ConfigError, match=why):
            parse_flags(f"--env-file {path}", allowed=["--env-file"])


def test_env_file_of_ordinary_names_passes_with_the_flag_allowed(tmp_path: Path) -> None:
    path = _env_file(tmp_path, "# settings\nFOO=bar\nLANG=C.UTF-8\n\nTZ\n")
    assert parse_flags(f"--env-file {path}", allowed=["--env-file"])
    with pytest.raises(ConfigError, match="is refused: --env-file"):
        parse_flags(f"--env-file {path}")  # still off the flag allowlist by default


def test_unsafe_allow_env_through_the_launch_config() -> None:
    env = {"SANDBOX_ENV": "PYTHONPATH=/workspace", "SANDBOX_FLAGS": "-e LD_PRELOAD=/x.so"}
    with pytest.raises(ConfigError, match="sets LD_PRELOAD"):
        load_launch_config(env, image_flag="r.example/i@sha256:" + "a" * 64, available=["docker"])
    config = load_launch_config(
        env,
        image_flag="r.example/i@sha256:" + "a" * 64,
        available=["docker"],
        allowed_env=["PYTHONPATH", "LD_PRELOAD"],
    )
    assert config.env[0].name == "PYTHONPATH"
    with pytest.raises(ConfigError, match="--unsafe-allow-env 'FOO' is not a reserved"):
        load_launch_config({}, image_flag="r.example/i@sha256:" + "a" * 64, available=["docker"], allowed_env=["FOO"])


def test_the_committed_names_cover_the_generated_ones() -> None:
    """The data file holds at least what the extraction finds on this host (a stale file fails)."""
    script = _script()
    # Debian's man-db and manpages are part of the machines this runs on; without them this
    # check fails rather than passing unchecked.
    assert shutil.which("man"), "man is not installed (apt-get install man-db manpages)"
    found = set(script.loader_names(script.man("8", "ld.so")))
    found |= set(script.shell_names(script.man("1", "bash"), script.man("1", "dash")))
    assert sorted(name for name in found if not reserved(name)) == []


def test_the_engine_gets_the_checked_entries_not_the_env_file(tmp_path: Path) -> None:
    """A file swapped after the check (or a FIFO answering twice) cannot set what was never
    checked: the words handed to the engine hold the file's entries, not its path."""
    path = _env_file(tmp_path, "FOO=bar\nLANG=C.UTF-8\n")
    words = parse_flags(f"--rm --env-file {path} -e X=1", allowed=["--env-file"])
    Path(path).write_text("PYTHONPATH=/workspace\nLD_PRELOAD=/workspace/x.so\n")  # the swap
    assert path not in " ".join(words)
    assert words == ("--rm", "--env=FOO=bar", "--env=LANG=C.UTF-8", "--env=X=1")


def test_an_env_file_name_with_spaces_is_refused_as_the_engine_refuses_it(tmp_path: Path) -> None:
    path = _env_file(tmp_path, "BAD NAME=1\n")
    with pytest.raises(ConfigError, match="which the engine refuses"):
        parse_flags(f"--env-file {path}", allowed=["--env-file"])
