# Question: how many memories does each source contribute?
# The API caps every call at 100 rows, so page through with offset.
from collections import Counter

counts = Counter()
offset = 0
while offset < 2000:
    page = thermal.search("", limit=100, offset=offset)
    if not page:
        break
    for m in page:
        if m.source is None:
            counts["(null)"] += 1
        elif m.source == "":
            counts["(empty)"] += 1
        else:
            counts[m.source] += 1
    offset += len(page)

print(f"rows seen: {sum(counts.values())} (archive total {thermal.count()})")
for source, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    print(f"{source:<15} {n:>4}")
