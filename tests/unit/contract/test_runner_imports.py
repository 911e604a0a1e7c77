"""The contract runner never loads the build: ``run --deep`` and ``preflight --deep`` import it.

Checked in a fresh interpreter: the launch kernel's engines and the runner are imported as
``--deep`` imports them, and the suite's test layer is made (wheels by hash, deterministic
tar), then ``sys.modules`` must hold nothing of ``terminai_sandbox.assemble``.
import-linter's "contracts never imports the build" contract holds the same statically.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

DEEP_PATH = """
import json, sys
from pathlib import Path
import terminai_sandbox.engine.docker
from terminai_sandbox.contracts import contract_layer, run_contracts
work = Path(sys.argv[1])
layer = contract_layer(work / "suite", work / "empty.lock", work / "wheelhouse", work)
(work / "layer.tar").write_bytes(layer)
{extra}
print(json.dumps(sorted(name for name in sys.modules if name.startswith("terminai_sandbox.assemble"))))
"""


def _build_modules(tmp_path: Path, extra: str = "") -> list[str]:
    (tmp_path / "suite" / "tests").mkdir(parents=True)
    (tmp_path / "suite" / "tests" / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    (tmp_path / "empty.lock").write_text("# no test wheels\n")
    code = textwrap.dedent(DEEP_PATH).replace("{extra}", extra)
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    loaded: list[str] = json.loads(proc.stdout.splitlines()[-1])
    return loaded


def test_the_deep_path_loads_nothing_of_the_build(tmp_path: Path) -> None:
    assert _build_modules(tmp_path) == []
    with tarfile.open(tmp_path / "layer.tar") as layer:  # the layer was really made
        assert "opt/terminai/contracts/tests/test_ok.py" in layer.getnames()


def test_the_check_sees_the_build_when_it_is_loaded(tmp_path: Path) -> None:
    # What the runner did before it declared `BuiltImage`: import the build's result type.
    loaded = _build_modules(tmp_path, extra="from terminai_sandbox.assemble import BuildResult")
    assert "terminai_sandbox.assemble" in loaded and "terminai_sandbox.assemble.image" in loaded
