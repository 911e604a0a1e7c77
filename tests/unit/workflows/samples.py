"""A compliant one-job workflow that tests break one rule at a time."""

from __future__ import annotations

import textwrap

CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2"

GOOD_JOB = f"""\
runs-on: ubuntu-24.04
permissions:
  contents: read
steps:
  - uses: {CHECKOUT}
    with:
      persist-credentials: false
  - run: make lint
"""


def workflow(job_body: str, *, top: str = "permissions: {}\n", on: str = "on: push\n") -> str:
    """A named workflow with one named job ``j`` (zizmor's pedantic persona wants names)."""
    return (
        "name: sample\n"
        + on
        + top
        + "concurrency:\n  group: sample\n  cancel-in-progress: true\n"
        + "jobs:\n  j:\n    name: sample job\n"
        + textwrap.indent(textwrap.dedent(job_body), "    ")
    )
