from datetime import date

days = sorted(date.fromisoformat(m.date) for m in thermal.filter(limit=100))
gaps = [((b - a).days, a, b) for a, b in zip(days, days[1:])]
gaps.sort(reverse=True)
print("largest gaps between memories:")
for length, a, b in gaps[:3]:
    print(f"  {length} days: {a} -> {b}")
