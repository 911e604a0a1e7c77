from datetime import date, timedelta

end = date(2026, 1, 31)
start = end - timedelta(days=14)
recent = thermal.filter(date_after=str(start), date_before=str(end))
print(f"From {start} to {end}: {len(recent)} memories")
for m in recent:
    print("-", m.date, m.title, f"({m.source})")
