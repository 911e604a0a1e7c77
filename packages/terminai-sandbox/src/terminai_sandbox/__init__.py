"""Sovereign Sandbox host tooling: build, prove, sign, verify and launch the sandbox image."""

from terminai_sandbox._version import __version__

__all__ = ["__version__"]
