"""T-APTS: the versioned toolset that lives inside the Sovereign Sandbox image.

Importing this package is cheap and prints nothing (agents parse stdout); sub-packages
(``model``, ``action``, ``memory``, ``executor``, ``evolution``) are imported on demand.
"""

from terminai_apts._version import __version__

__all__ = ["__version__"]
