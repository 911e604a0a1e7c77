from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Key:
    month: str
    source: str


counts = {}
for m in thermal.filter(limit=100):
    k = Key(m.date[:7], m.source)
    counts[k] = counts.get(k, 0) + 1
for k in sorted(counts)[:6]:
    print(k, counts[k])
print(len(counts), "keys")
