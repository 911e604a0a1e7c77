# Question: how many days pass between redis incidents?
from datetime import date, datetime


def parse_day(value):
    # dates come as 2025-12-15, 2025-12-15 20:40:00, 2025-12-15T20:40:00Z or with an offset
    return date.fromisoformat(value[:10])


hits = thermal.search("redis", limit=100)
incidents = [m for m in hits if m.title and ("incident" in m.title.lower() or "SEV" in m.title)]
days = sorted({parse_day(m.date) for m in incidents if m.date})

print(f"{len(incidents)} redis incidents on {len(days)} distinct days")
gaps = [(b - a).days for a, b in zip(days, days[1:])]
print("gaps in days:", gaps)
if gaps:
    print(f"mean gap {sum(gaps) / len(gaps):.1f} days, longest {max(gaps)} days")

full = [m for m in incidents if m.date and "T" in m.date]
for m in sorted(full, key=lambda m: m.id)[:4]:
    ts = datetime.fromisoformat(m.date.replace("Z", "+00:00"))
    print(m.id, ts.isoformat(), ts.utcoffset())
