from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from terminai_sandbox.cli import main
from terminai_sandbox.contract_diff import diff, diff_files, load
from terminai_sandbox.errors import ConfigError, ContractError

MANIFEST = Path(__file__).resolve().parents[3] / "contracts" / "t-apts" / "contract.json"


@pytest.fixture()
def base() -> dict[str, Any]:
    return load(MANIFEST)


def write(tmp_path: Path, name: str, data: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_identical_manifests_have_no_changes(base: dict[str, Any]) -> None:
    assert diff(base, base).changes == ()


def test_removed_enum_member_is_breaking(base: dict[str, Any]) -> None:
    new = copy.deepcopy(base)
    new["modules"]["terminai_apts.model"]["symbols"]["ObjectTableLabels"]["members"].remove("TRANSIT")
    result = diff(base, new)
    assert [(c.kind, c.item) for c in result.changes] == [("breaking", "terminai_apts.model.ObjectTableLabels.TRANSIT")]
    assert "major" in (result.version_problem() or "")


def test_additions_are_additive(base: dict[str, Any]) -> None:
    new = copy.deepcopy(base)
    major, minor, _ = (int(p) for p in base["contract_version"].split("."))
    new["contract_version"] = f"{major}.{minor + 1}.0"
    new["modules"]["terminai_apts.future"] = {"symbols": {"execute": {"kind": "function", "parameters": []}}}
    new["modules"]["terminai_apts.model"]["symbols"]["ObjectTableLabels"]["members"].append("SHRED")
    params = new["modules"]["terminai_apts.action.cleanup"]["symbols"]["cleanup_downloads"]["parameters"]
    params.append({"name": "extra", "kind": "KEYWORD_ONLY", "default": "None"})
    result = diff(base, new)
    assert {c.kind for c in result.changes} == {"additive"} and len(result.changes) == 3
    assert result.version_problem() is None


@pytest.mark.parametrize(
    ("mutate", "detail"),
    [
        (lambda p: p.pop(0), "renamed/reordered"),
        (lambda p: p[1].update(default="False"), "default"),
        (lambda p: p[0].update(kind="KEYWORD_ONLY"), "kind"),
        (lambda p: p.append({"name": "must", "kind": "KEYWORD_ONLY"}), "required parameter"),
    ],
)
def test_signature_changes_are_breaking(base: dict[str, Any], mutate: Any, detail: str) -> None:
    new = copy.deepcopy(base)
    mutate(new["modules"]["terminai_apts.action.cleanup"]["symbols"]["cleanup_downloads"]["parameters"])
    result = diff(base, new)
    assert result.breaking and detail in result.breaking[0].detail


def test_removed_module_symbol_entry_point_and_schema_change_are_breaking(base: dict[str, Any]) -> None:
    new = copy.deepcopy(base)
    del new["modules"]["apts.model"]
    del new["modules"]["terminai_apts.model"]["symbols"]["CleanupPolicy"]
    new["entry_points"] = [e for e in new["entry_points"] if e["module"] != "apts.action.cleanup"]
    new["schemas"]["cleanup-plan"]["required"].append("extra")
    items = {c.item for c in diff(base, new).breaking}
    assert items == {
        "apts.model",
        "terminai_apts.model.CleanupPolicy",
        "python -m apts.action.cleanup",
        "schema cleanup-plan",
    }


def test_diff_files_requires_a_major_bump_for_breaking(tmp_path: Path, base: dict[str, Any]) -> None:
    new = copy.deepcopy(base)
    del new["modules"]["terminai_apts.model"]["symbols"]["CleanupPolicy"]
    major, minor, _ = (int(p) for p in base["contract_version"].split("."))
    new["contract_version"] = f"{major}.{minor + 1}.0"
    with pytest.raises(ContractError, match="major contract version"):
        diff_files(MANIFEST, write(tmp_path, "new.json", new))
    new["contract_version"] = f"{major + 1}.0.0"
    assert diff_files(MANIFEST, write(tmp_path, "new.json", new)).breaking


def test_additive_change_needs_a_higher_version(tmp_path: Path, base: dict[str, Any]) -> None:
    new = copy.deepcopy(base)
    new["modules"]["terminai_apts.model"]["symbols"]["ObjectTableLabels"]["members"].append("SHRED")
    with pytest.raises(ContractError, match="higher contract version"):
        diff_files(MANIFEST, write(tmp_path, "new.json", new))


def test_bad_manifest_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a contract manifest"):
        load(tmp_path / "other.json")


def test_cli_exit_codes(tmp_path: Path, base: dict[str, Any]) -> None:
    runner = CliRunner()
    ok = runner.invoke(main, ["contract", "diff", str(MANIFEST), str(MANIFEST), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.output)["breaking"] == []
    new = copy.deepcopy(base)
    new["modules"]["terminai_apts.model"]["symbols"]["ObjectTableLabels"]["members"].remove("TRANSIT")
    bad = runner.invoke(main, ["contract", "diff", str(MANIFEST), str(write(tmp_path, "n.json", new))])
    assert bad.exit_code == 8
    assert "terminai_apts.model.ObjectTableLabels.TRANSIT" in bad.output
