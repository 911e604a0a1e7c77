"""The host side of a run: ``execute`` and ``ExecutorSession`` (``run``), the channel that
reads a run's frames as hostile input (layer 7), the zygote's client, the CLI and the
hash-chained audit log (layer 8). It starts the zygote by module path and never imports
the processes inside the boundary (``process/``) or the OS layer (``os_layer/``)."""
