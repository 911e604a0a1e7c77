"""What crosses from one step of the pipeline to the next, as types instead of paths and dicts.

The floor every room stands on: it imports only :mod:`terminai_sandbox.errors` and the
package data in :mod:`terminai_sandbox.resources`, never a room above it.

- :mod:`~terminai_sandbox.artifacts.contract`: the T-APTS contract version this launcher
  supports and the image label that carries it (stdlib only: a launch imports it);
- :mod:`~terminai_sandbox.artifacts.oci_layout`: an OCI image layout opened and checked
  (index, the one image manifest, config, layer blobs, digests of what it reads);
- :mod:`~terminai_sandbox.artifacts.debian_lock`: ``images/sandbox/debian.lock``, parsed strictly;
- :mod:`~terminai_sandbox.artifacts.wheel_lock`: a hash-pinned ``requirements.lock``;
- :mod:`~terminai_sandbox.artifacts.image_locks`: the locks an image was built from, together.

This module re-exports nothing, so importing the contract module costs a launch no more
than that module.
"""
