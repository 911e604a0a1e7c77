from enum import Enum


class Status(Enum):
    OPEN = "open"
    DONE = "done"


def status_of(m):
    return Status.OPEN if "status open" in m.content else Status.DONE


rows = thermal.search("Hiring plan")
for m in rows:
    s = status_of(m)
    print(m.date, s.name, s.value)
print("open count:", sum(1 for m in rows if status_of(m) is Status.OPEN))
