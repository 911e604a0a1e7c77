# Question: one timeline of every council decision, merging several ways of finding them.
from dataclasses import dataclass
from operator import attrgetter


@dataclass(frozen=True)
class TimelineEntry:
    day: str
    memory_id: str
    title: str


found = (
    thermal.search("Decision", limit=100)
    + thermal.grep("decided", limit=100)
    + thermal.filter(source="council", limit=100)
)

entries = {}
for m in found:
    if m.source != "council" or not m.title:
        continue
    entries[m.id] = TimelineEntry(day=(m.date or "")[:10], memory_id=m.id, title=m.title)

timeline = sorted(entries.values(), key=attrgetter("day", "memory_id"))
print(f"{len(found)} raw hits -> {len(timeline)} council entries")
current_month = None
for e in timeline:
    if e.day[:7] != current_month:
        current_month = e.day[:7]
        print(f"[{current_month}]")
    print(f"  {e.day}  {e.memory_id}  {e.title}")
