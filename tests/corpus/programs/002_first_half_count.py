from datetime import date

start, end = date(2025, 10, 1), date(2025, 12, 31)
rows = thermal.filter(date_after=start.isoformat(), date_before=end.isoformat())
print(f"Memories between {start} and {end}: {len(rows)}")
by_month = {}
for m in rows:
    key = m.date[:7]
    by_month[key] = by_month.get(key, 0) + 1
for month in sorted(by_month):
    print(month, by_month[month])
