# Question: what happened on the busiest days of December?
from itertools import groupby

rows = thermal.filter(date_after="2025-12-01", date_before="2025-12-31 23:59:59", limit=100)
rows = sorted(rows, key=lambda r: (r.date[:10], r.id))

days = []
for day, group in groupby(rows, key=lambda r: r.date[:10]):
    items = list(group)
    days.append((day, items))

print(f"{len(rows)} memories over {len(days)} days in December")
busiest = sorted(days, key=lambda d: (-len(d[1]), d[0]))[:3]
for day, items in busiest:
    print(f"{day}: {len(items)} memories")
    for r in items:
        print(f"    {r.id} {r.source}: {r.title}")
