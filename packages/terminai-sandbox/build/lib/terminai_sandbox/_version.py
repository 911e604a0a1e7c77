"""The single definition of the Sovereign Sandbox version.

Both packages and the image tag share this number. ``terminai_sandbox/_version.py`` is a
symbolic link to this file, so there is exactly one place to bump it.
"""

__version__ = "0.1.0"
