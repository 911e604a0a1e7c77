"""The launch kernel: everything between ``terminai-sandbox run`` and the session's exit code.

Configuration (:mod:`.config`, :mod:`.settings`, :mod:`.default_image`), reference parsing
(:mod:`.reference`), preflight (:mod:`.preflight` with :mod:`.engines`, :mod:`.dockerapi`,
:mod:`.trust`, :mod:`.project`, :mod:`.registry_auth`), the hardened run (:mod:`.run`), the
audit ledger (:mod:`.audit`), :mod:`.session`, which strings them together, and the
click-free ``run`` entry with its error boundary (:mod:`.entry`, :mod:`.options`).

The kernel is sealed: it imports the standard library, :mod:`terminai_sandbox.errors`, the
version and the toolset's hash chain (``terminai_apts.ledger``), nothing else;
``tests/unit/launch/test_kernel_seal.py`` holds the set. Every session start pays for
what it imports, and the goal is a warm start within 1.2x of a plain ``docker run``
(``benchmarks/launch.py``). What the budget costs in code stays in here:

* :mod:`.entry` parses ``run`` without click (~45 ms of a warm start on a loaded machine);
  the click commands are built from the same option table (:mod:`.options`);
* :mod:`.records` gives frozen records without :mod:`dataclasses` (which imports
  ``inspect``, ``ast`` and ``tokenize``), and type-only imports sit under
  ``TYPE_CHECKING = False`` so :mod:`typing` is never loaded;
* :mod:`terminai_sandbox.engine.client`, the package's one engine client, asks the
  engine over a plain socket (a docker SDK, with requests and urllib3, would cost ~80 ms
  to import);
* the registry client, the signature verifier and cryptography are imported inside the
  functions that need them (first verification of a digest, a tag on podman, ``--deep``);
  a warm start never loads them.

Everything outside this package uses dataclasses, typing and click as usual.
"""
