"""The engine choice from ~/.terminai/settings.json, and where it ranks against env and flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.launch.config import load_launch_config
from terminai_sandbox.launch.settings import SettingsFile, settings_path, strip_comments


def _settings(home: Path, content: str | bytes | object) -> dict[str, str]:
    directory = home / ".terminai"
    directory.mkdir(exist_ok=True)
    path = directory / "settings.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return {"HOME": str(home)}


def test_the_file_is_under_home_from_the_passed_environment(tmp_path: Path) -> None:
    assert settings_path({"HOME": str(tmp_path)}) == tmp_path / ".terminai" / "settings.json"
    assert settings_path({}) is None
    assert settings_path({"HOME": ""}) is None


def test_no_home_no_file_no_directory_or_no_key_is_none(tmp_path: Path) -> None:
    assert SettingsFile({}).engine() is None
    assert SettingsFile({"HOME": ""}).engine() is None
    assert SettingsFile({"HOME": str(tmp_path)}).engine() is None  # no ~/.terminai
    (tmp_path / ".terminai").mkdir()
    assert SettingsFile({"HOME": str(tmp_path)}).engine() is None  # no settings.json
    assert SettingsFile(_settings(tmp_path, {})).engine() is None
    assert SettingsFile(_settings(tmp_path, {"tools": {"allowed": ["ls"]}, "ui": {"theme": "x"}})).engine() is None
    assert SettingsFile(_settings(tmp_path, {"tools": {}})).engine() is None


def test_home_that_is_a_file_means_no_settings(tmp_path: Path) -> None:
    (tmp_path / ".terminai").write_text("not a directory")
    assert SettingsFile({"HOME": str(tmp_path)}).engine() is None


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"tools": {"sandbox": True}}, "true"),
        ({"tools": {"sandbox": False}}, "false"),
        ({"tools": {"sandbox": "podman"}}, "podman"),
        ({"tools": {"sandbox": " Docker "}}, " Docker "),  # returned as written; parse_engine normalises
        ({"tools": {"sandbox": ""}}, ""),
        ({"tools": {"sandbox": "runsc"}}, "runsc"),  # validated later, by parse_engine
        ({"sandbox": "docker"}, "docker"),  # older files, before TerminAI moved it under tools
        ({"sandbox": False}, "false"),
        ({"sandbox": "docker", "tools": {"sandbox": "podman"}}, "podman"),  # both: tools.sandbox wins
        ({"sandbox": "docker", "tools": {"core": []}}, "docker"),
        ({"sandbox": 7, "tools": {"sandbox": "podman"}}, "podman"),  # the shadowed key is not consulted
    ],
)
def test_the_value_is_taken_from_tools_sandbox_then_sandbox(tmp_path: Path, document: object, expected: str) -> None:
    assert SettingsFile(_settings(tmp_path, document)).engine() == expected


def test_comments_are_allowed_as_terminai_allows_them(tmp_path: Path) -> None:
    text = """// user settings
    {
      /* the sandbox */ "tools": {
        "sandbox": "podman", // not docker
        "discoveryCommand": "echo // not a comment /* either */ \\" // still a string"
      }
    }
    """
    assert SettingsFile(_settings(tmp_path, text)).engine() == "podman"
    # A JSON error after comments still points at its own line.
    with pytest.raises(ConfigError, match="line 4, column 28"):
        SettingsFile(_settings(tmp_path, '// a\n/* b\n c */\n{"tools": {"sandbox": true,}}')).engine()


def test_comment_stripping_keeps_strings_and_positions() -> None:
    assert strip_comments('{"a": "x//y", "b": "/*z*/"}') == '{"a": "x//y", "b": "/*z*/"}'
    assert strip_comments('{"a": 1 /* two\nlines */}') == '{"a": 1 ' + " " * 6 + "\n" + " " * 8 + "}"
    assert strip_comments('{"a": "q\\"//"} // c') == '{"a": "q\\"//"}     '
    assert strip_comments('{"a": 1} /* open') == '{"a": 1} /* open'


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"tools": {"sandbox": true,}}', r"is not valid JSON \(line 1, column"),
        ("{", "is not valid JSON"),
        ("", "is not valid JSON"),
        ('{"tools": {"sandbox": true}} /* open', "is not valid JSON"),
        ("\ufeff{}", "is not valid JSON"),
        (b'{"tools": {"sandbox": "\xff"}}', "is not UTF-8 text"),
        ("[]", "holds an array, not a JSON object"),
        ('"docker"', "holds a string, not a JSON object"),
        ("null", "holds null, not a JSON object"),
    ],
)
def test_a_broken_file_is_refused_naming_it(tmp_path: Path, content: str | bytes, problem: str) -> None:
    env = _settings(tmp_path, content)
    with pytest.raises(ConfigError, match=problem) as caught:
        SettingsFile(env).engine()
    path = tmp_path / ".terminai" / "settings.json"
    assert str(path) in caught.value.message and "tools.sandbox" in caught.value.message
    assert str(path) in caught.value.hint and "comments are allowed" in caught.value.hint
    assert caught.value.exit_code == 3


@pytest.mark.parametrize(
    ("document", "key", "problem"),
    [
        ({"tools": {"sandbox": 1}}, "tools.sandbox", "is the number 1"),
        ({"tools": {"sandbox": None}}, "tools.sandbox", "is null"),
        ({"tools": {"sandbox": ["docker"]}}, "tools.sandbox", "is an array"),
        ({"tools": {"sandbox": {"enabled": True, "command": "docker"}}}, "tools.sandbox", "is an object"),
        ({"sandbox": 0}, "sandbox", "is the number 0"),
        ({"tools": "docker"}, "tools", "is a string; it must be an object"),
        ({"tools": None}, "tools", "is null; it must be an object"),
        ({"tools": True, "sandbox": "docker"}, "tools", "is the boolean true"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_key(
    tmp_path: Path, document: object, key: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        SettingsFile(_settings(tmp_path, document)).engine()
    assert caught.value.message.startswith(f"in the settings file {tmp_path / '.terminai' / 'settings.json'}, {key} ")
    assert '"tools": {"sandbox": VALUE}' in caught.value.hint and '"podman"' in caught.value.hint


def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".terminai" / "settings.json").mkdir(parents=True)  # unreadable for root too
    with pytest.raises(ConfigError, match=r"settings\.json cannot be read"):
        SettingsFile({"HOME": str(tmp_path)}).engine()


def test_env_beats_flag_beats_settings(tmp_path: Path) -> None:
    env = _settings(tmp_path, {"tools": {"sandbox": "podman"}})
    base = {"available": ["docker", "podman"], "default_image": lambda: None}
    setting = SettingsFile(env).engine()

    cfg = load_launch_config(env, settings_engine=lambda: setting, **base)  # type: ignore[arg-type]
    assert (cfg.engine, cfg.engine_from) == ("podman", "settings")

    cfg = load_launch_config(env, engine_flag="docker", settings_engine=lambda: setting, **base)  # type: ignore[arg-type]
    assert (cfg.engine, cfg.engine_from) == ("docker", "--engine")

    env = {**env, "TERMINAI_SANDBOX": "false"}
    cfg = load_launch_config(env, engine_flag="docker", settings_engine=lambda: setting, **base)  # type: ignore[arg-type]
    assert (cfg.engine, cfg.engine_from) == (None, "TERMINAI_SANDBOX")


def test_a_setting_that_switches_the_sandbox_off_or_names_no_engine(tmp_path: Path) -> None:
    base = {"available": ["docker", "podman"], "default_image": lambda: None}
    off = SettingsFile(_settings(tmp_path, {"tools": {"sandbox": False}})).engine()
    cfg = load_launch_config({}, settings_engine=lambda: off, **base)  # type: ignore[arg-type]
    assert (cfg.engine, cfg.engine_from) == (None, "settings")
    bad = SettingsFile(_settings(tmp_path, {"tools": {"sandbox": "runsc"}})).engine()
    with pytest.raises(ConfigError, match="settings='runsc' is not a sandbox engine"):
        load_launch_config({}, settings_engine=lambda: bad, **base)  # type: ignore[arg-type]


def test_a_broken_settings_file_is_not_read_when_env_or_flag_chose(tmp_path: Path) -> None:
    env = _settings(tmp_path, "{not json")
    base = {"available": ["docker", "podman"], "default_image": lambda: None}
    cfg = load_launch_config(
        {**env, "TERMINAI_SANDBOX": "podman"}, settings_engine=lambda: SettingsFile(env).engine(), **base
    )  # type: ignore[arg-type]
    assert cfg.engine == "podman"
    cfg = load_launch_config(env, engine_flag="docker", settings_engine=lambda: SettingsFile(env).engine(), **base)  # type: ignore[arg-type]
    assert cfg.engine == "docker"
    with pytest.raises(ConfigError, match="settings"):
        load_launch_config(env, settings_engine=lambda: SettingsFile(env).engine(), **base)  # type: ignore[arg-type]
