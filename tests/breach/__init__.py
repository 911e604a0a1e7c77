"""Assume-breach harness: unrestricted Python inside a fully hardened run.

Test-only. The raw runner below replaces RestrictedPython *after* every isolation step
has been applied, through the production fork and setup code (``zygote.main`` with a
different runner). Nothing in the installed packages can select it: the production
zygote entry point always uses ``child.run_cell`` (``test_unreachable.py`` proves it).
"""
