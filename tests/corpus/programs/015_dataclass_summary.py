from dataclasses import dataclass, field


@dataclass
class TopicSummary:
    topic: str
    ids: list = field(default_factory=list)
    sources: set = field(default_factory=set)

    def add(self, m):
        self.ids.append(m.id)
        self.sources.add(m.source)

    def line(self):
        return f"{self.topic}: {len(self.ids)} memories from {', '.join(sorted(self.sources))}"


summaries = {}
for m in thermal.search("migration", limit=50):
    base = m.title.rsplit(" (", 1)[0]
    summaries.setdefault(base, TopicSummary(base)).add(m)
for s in sorted(summaries.values(), key=lambda s: s.topic):
    print(s.line())
