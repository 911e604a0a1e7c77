"""The zygote loads its modules with the cyclic garbage collector off (nothing it
allocates then is garbage); every run must nevertheless start with it on, or a program
that builds reference cycles would keep them until its memory limit killed it."""

from __future__ import annotations

from tests.breach import harness

# Cycles freed without anyone calling gc.collect(): only the collector's own passes free them.
CYCLES = """
import gc
{prelude}
freed = [0]
class Node:
    def __del__(self):
        freed[0] += 1
for _ in range(20000):
    a, b = Node(), Node()
    a.other, b.other = b, a
print(gc.isenabled(), freed[0] > 30000)
"""


def test_runs_start_with_the_collector_on() -> None:
    result = harness.breach(CYCLES.format(prelude=""))
    assert result.success, result.error
    assert result.stdout == "True True\n"


def test_without_it_the_cycles_stay() -> None:
    # The check above fails when the collector is off in the run.
    result = harness.breach(CYCLES.format(prelude="gc.disable()"))
    assert result.success, result.error
    assert result.stdout == "False False\n"
