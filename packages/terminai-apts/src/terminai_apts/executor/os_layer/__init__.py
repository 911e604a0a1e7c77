"""The OS layer (layer 6): the boundary of each run (namespaces, its own root, Landlock,
seccomp, resource limits), composed by ``isolation``. It holds with the Python layer gone
and imports nothing of it."""
