"""Compatibility shim: legacy ``import apts`` code gets the T-APTS objects themselves.

No logic lives here and importing prints nothing; every name is the very object from
``terminai_apts`` (``apts.model.ObjectTableLabels is terminai_apts.model.ObjectTableLabels``).
"""

from terminai_apts import __version__

__all__ = ["__version__"]
