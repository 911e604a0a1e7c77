# Question: break down incidents by severity level.
import re
from collections import Counter
from enum import Enum


class Severity(Enum):
    SEV1 = 1
    SEV2 = 2
    SEV3 = 3
    SEV4 = 4
    UNKNOWN = 9


def severity_of(memory):
    text = f"{memory.title or ''} {memory.content or ''}"
    found = re.search(r"SEV([1-4])", text)
    return Severity(int(found.group(1))) if found else Severity.UNKNOWN


hits = thermal.search("Severity", limit=100)
counts = Counter(severity_of(m) for m in hits)

for level in Severity:
    print(f"{level.name:<8} {counts.get(level, 0)}")
worst = min((m for m in hits), key=lambda m: (severity_of(m).value, m.date or "", m.id))
print("earliest of the worst severity:", worst.id, worst.date, severity_of(worst))
