# Question: histogram of confidence values across the archive.
import math
from collections import Counter

rows = []
for page_no in range(10):
    page = thermal.search("", limit=100, offset=page_no * 100)
    if not page:
        break
    rows.extend(page)

buckets = Counter()
for r in rows:
    if r.confidence is None:
        buckets["none"] += 1
    else:
        low = math.floor(r.confidence * 10 + 1e-9) / 10
        buckets[f"{low:.1f}"] += 1

for key in sorted(k for k in buckets if k != "none"):
    bar = "#" * math.ceil(buckets[key] / 5)
    print(f"{key}  {buckets[key]:>4}  {bar}")
print(f"none {buckets['none']:>4}")
print("distinct values:", sorted({r.confidence for r in rows if r.confidence is not None}))
