# Sort GPU-related memories into small classes by tag and report them by class name.
class Entry:
    kind = "other"

    def __init__(self, memory):
        self.title = memory.title
        self.confidence = memory.confidence

    @property
    def label(self):
        return f"[{type(self).__name__}] {self.title}"

    @classmethod
    def accepts(cls, memory):
        return cls.kind in memory.tags


class Decision(Entry):
    kind = "decision"


class Incident(Entry):
    kind = "incident"


class Meeting(Entry):
    kind = "meeting"


KINDS = [Decision, Incident, Meeting]


def classify(memory):
    for cls in KINDS:
        if cls.accepts(memory):
            return cls(memory)
    return Entry(memory)


entries = [classify(m) for m in thermal.search("GPU", limit=10)]
counts = {}
for e in entries:
    name = e.__class__.__name__
    counts[name] = counts.get(name, 0) + 1
print("by class:", sorted(counts.items()))
for e in sorted(entries, key=lambda e: (type(e).__name__, e.title))[:6]:
    print(e.label, f"{e.confidence:.2f}")
