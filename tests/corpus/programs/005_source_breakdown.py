from collections import Counter

memories = thermal.filter(limit=100)
sources = Counter(m.source for m in memories)
total = sum(sources.values())
print(f"{total} memories by source")
for source, n in sources.most_common():
    print(f"  {source:<6} {n:>3}  {n / total:6.1%}")
