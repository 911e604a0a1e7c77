"""The container engine room: one protocol, two engines, one client, one wire, one list of sockets.

- :mod:`.protocol`: :class:`~.protocol.Engine`, what a session start needs of any engine,
  and :func:`~.protocol.connect`; its implementations :mod:`.docker` (dockerd over its API)
  and :mod:`.podman` (the podman CLI), with the flags in which they differ (:mod:`.flags`)
  and what their CLIs share (:mod:`.cli`).
- :mod:`.client`: :class:`~.client.DockerApi`, the one Docker Engine API client, which the
  build, the contract suite and the release use directly (:func:`~.client.connect`).
- :mod:`.transport`: the socket, one HTTP exchange, chunking, stream demultiplexing and the
  cache of answers a session start asked for early.
- :mod:`.sockets`: where engine sockets live, read by connecting and by the mount checks.
- :mod:`.runtime` (runc or gVisor) and :mod:`.pull_lines` (a pull's progress for people).

Standard library only, and nothing imported here: the launch kernel loads this room on
every session start (the seal test in ``tests/unit/launch/test_kernel_seal.py``).
"""
