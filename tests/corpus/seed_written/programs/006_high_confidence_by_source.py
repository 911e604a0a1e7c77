# Question: since December, which sources produce high-confidence (>= 0.9) memories?
from collections import Counter

rows = thermal.filter(min_confidence=0.9, date_after="2025-12-01", limit=100)
by_source = Counter(r.source for r in rows)

print(f"{len(rows)} memories with confidence >= 0.9 since 2025-12-01")
for source, n in sorted(by_source.items(), key=lambda kv: (-kv[1], str(kv[0]))):
    print(f"  {source}: {n}")
print("lowest confidence in the set:", min(r.confidence for r in rows))
