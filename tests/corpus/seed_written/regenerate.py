"""Write ``expected/*.out`` with the seed's own code: ``python -m tests.corpus.seed_written.regenerate``
(``TERMINAI_SEED_000`` names the seed document)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tests.corpus.seed_written import PROGRAMS, ROOT, run, write_archive
from tests.unit.memory.seed_statements import seed_api


def main() -> None:
    api = seed_api()
    with tempfile.TemporaryDirectory() as tmp:
        archive = str(write_archive(Path(tmp) / "archive.db"))
        for program in PROGRAMS:
            (ROOT / "expected" / f"{program.stem}.out").write_text(run(program, api(archive)), encoding="utf-8")


if __name__ == "__main__":
    main()
