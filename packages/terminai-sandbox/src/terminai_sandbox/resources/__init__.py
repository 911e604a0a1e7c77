"""Files the installed tooling needs without a checkout, shipped as package data.

In the repository these are symbolic links to the one copy each (``contracts/`` and
``images/sandbox/*.lock``); building the wheel copies their content, so an editable
install and an installed wheel read the same bytes from the same place.

- ``contracts/``: the T-APTS contract manifest and the suite that runs inside the image;
- ``requirements-test.lock``: the hash-pinned wheels of the suite's test layer (fetched by
  hash, never bundled: they are other projects' releases);
- ``debian.lock`` and ``requirements.lock``: what the image of this version was built
  from, for the SBOM's package hashes.
"""

from __future__ import annotations

from pathlib import Path

from terminai_sandbox.errors import ConfigError

HERE = Path(__file__).resolve().parent


def _present(path: Path, what: str) -> Path:
    if not path.exists():
        raise ConfigError(
            f"{what} is missing from this installation ({path})",
            hint="reinstall terminai-sandbox from its wheel, or run it from a complete checkout",
        )
    return path


def contract_suite() -> Path:
    """The directory holding ``t-apts/contract.json`` and ``tests/``."""
    return _present(HERE / "contracts", "the contract suite")


def contract_manifest() -> Path:
    """The T-APTS contract manifest (``t-apts/contract.json``): the one source of the contract version."""
    return _present(HERE / "contracts" / "t-apts" / "contract.json", "the contract manifest")


def contract_test_lock() -> Path:
    """The hash-pinned lock of the wheels the contract suite's test layer installs."""
    return _present(HERE / "requirements-test.lock", "the contract suite's wheel lock")


def image_locks() -> Path:
    """The directory holding the ``debian.lock`` and ``requirements.lock`` this version was built from."""
    return HERE
