# Question: what was recorded about the standup on 2026-01-04?
# Bounds given as full datetimes this time.
start = "2026-01-04 00:00:00"
end = "2026-01-04 23:59:59"
rows = thermal.search("Standup", date_range=(start, end), limit=50)

on_day = [r for r in rows if r.date and r.date.startswith("2026-01-04")]
print(f"{len(rows)} rows returned, {len(on_day)} dated 2026-01-04")
for r in sorted(on_day, key=lambda r: (r.date, r.id)):
    print(f"{r.id} | {r.date!r} | {r.title} | summary={r.summary!r} | confidence={r.confidence}")
