import bisect

rows = sorted(thermal.filter(limit=100), key=lambda m: m.date)
dates = [m.date for m in rows]
for probe in ["2025-10-15", "2025-12-01", "2026-02-01"]:
    i = bisect.bisect_left(dates, probe)
    nxt = rows[i].date + " " + rows[i].title if i < len(rows) else "none"
    print(f"{probe}: {i} before, next -> {nxt}")
