"""The floor every room stands on: small, standard-library-only helpers shared by the launch
kernel and the rest of the package. Image references (``reference``), registry credentials
(``registry_auth``), OCI runtimes (``runtime``), where engines live and why none answers
(``dockerapi``) and frozen records without :mod:`dataclasses` (``records``).

They import nothing of the package but the error hierarchy and the secret type, so the
session-start path (``terminai-sandbox run``) can use them without loading anything heavy;
the launch kernel's seal test (``tests/unit/launch/test_kernel_seal.py``) covers them too.
"""
