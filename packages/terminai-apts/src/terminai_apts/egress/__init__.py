"""Network egress by policy: the policy model and the allowlisting proxy that enforces it.

Standard library only, like the launch kernel that imports :mod:`.policy` on session start.
"""
