"""The order ``conftest.py`` gives the collection: pytest-xdist's ``worksteal`` hands each
worker a contiguous slice of it, the same number of tests each, so every slice must hold
about the same expected time, its longest tests first."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("root_conftest_under_test", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Item:
    nodeid: str
    slow: bool = False

    def get_closest_marker(self, name: str) -> object:
        return True if name == "slow" and self.slow else None


def _slices(order: list[Any], workers: int) -> list[list[Any]]:
    """What worksteal sends each worker first: the pending tests divided by the workers left."""
    out, left = [], list(order)
    for index in range(workers):
        size = len(left) // (workers - index)
        out.append(left[:size])
        left = left[size:]
    return out


def _cost(part: list[Item], table: dict[str, float], counts: dict[str, int]) -> float:
    return sum(table[i.nodeid.split("::")[0]] / counts[i.nodeid.split("::")[0]] for i in part)


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_each_slice_gets_about_the_same_time_longest_tests_first(workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    conftest = _conftest()
    # Shaped like this suite: long files of one test, a file of 200 tests of a second,
    # unit files of a second or so and thousands of quick tests.
    table = {"long_a.py": 100.0, "long_b.py": 90.0, "long_c.py": 80.0, "long_d.py": 70.0, "matrix.py": 200.0}
    items = [Item(f"{name}::test") for name in ("long_a.py", "long_b.py", "long_c.py", "long_d.py")]
    items += [Item(f"matrix.py::test[{n}]") for n in range(200)]
    items += [Item(f"unit_{n // 10}.py::test_{n}") for n in range(3000)]
    table |= {f"unit_{n}.py": 10.0 if n < 30 else 0.1 for n in range(300)}
    monkeypatch.setattr(conftest, "_cost_table", lambda: table)
    order = conftest.schedule(list(items), workers)
    assert sorted(i.nodeid for i in order) == sorted(i.nodeid for i in items)
    counts = {name: sum(1 for i in items if i.nodeid.startswith(name + "::")) for name in table}
    costs = [_cost(part, table, counts) for part in _slices(order, workers)]
    assert max(costs) - min(costs) <= 0.1 * sum(costs) / workers, costs
    # No slice starts with quick tests while long ones wait behind them.
    for part in _slices(order, workers):
        firsts = [table[i.nodeid.split("::")[0]] / counts[i.nodeid.split("::")[0]] for i in part]
        assert firsts[0] == max(firsts), part[:3]


def test_longest_first_as_one_list_would_put_every_long_test_in_one_slice() -> None:
    """The companion: the order before (longest first, one list) under the same split."""
    items = [Item(f"long_{n}.py::test", slow=True) for n in range(4)] + [
        Item(f"u{n // 10}.py::t{n}") for n in range(400)
    ]
    first, second = _slices(items, 2)
    assert sum(i.slow for i in first) == 4 and not any(i.slow for i in second)
    order = _conftest().schedule(list(items), 2)
    assert [sum(i.slow for i in part) for part in _slices(order, 2)] == [2, 2]


def test_the_table_script_sums_a_junit_report_per_file(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase file="tests/a.py" name="t1" time="2.5"/><testcase file="tests/a.py" name="t2" time="1.5"/>'
        '<testcase file="tests/b.py" name="t" time="0.2"/></testsuite></testsuites>'
    )
    script = (ROOT / "scripts" / "test-durations").read_text()
    out = tmp_path / "durations.json"
    done = subprocess.run(
        [sys.executable, "-c", script.replace("OUT = ", f"OUT = Path({str(out)!r})  #", 1), str(report)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["seconds"] == {"tests/a.py": 4.0}  # b.py: under a second
