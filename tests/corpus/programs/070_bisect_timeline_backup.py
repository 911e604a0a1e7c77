import bisect

dates = sorted(m.date[:10] for m in thermal.search("backup restore", limit=50))
for probe in ("2025-10-15", "2025-12-01", "2026-01-10"):
    i = bisect.bisect_left(dates, probe)
    print(probe, "->", i, "before,", len(dates) - i, "after")
