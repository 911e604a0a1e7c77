"""Tools for developing and testing terminai-sandbox; never shipped in its wheel.

``localregistry`` (a throwaway loopback registry for tests, benchmarks and ``make demo``)
and ``daemon_config`` (registering gVisor's ``runsc`` with dockerd, for
``scripts/ensure-engine``) serve a checkout, not a user's launcher: the wheel's package list
(``packages/terminai-sandbox/pyproject.toml``) leaves this package out, and import-linter
keeps ``terminai_sandbox`` from importing it. A checkout's editable install puts ``src/`` on
the path, so it imports as ``terminai_sandbox_dev``.
"""
