"""Write ``tests/corpus/expected/*.out`` from the oracle: ``python -m tests.corpus.regenerate``."""

from __future__ import annotations

from pathlib import Path

from tests.corpus import oracle

ROOT = Path(__file__).resolve().parent


def main() -> None:
    for path in sorted((ROOT / "programs").glob("*.py")):
        (ROOT / "expected" / f"{path.stem}.out").write_text(oracle.run(path.read_text()))


if __name__ == "__main__":
    main()
