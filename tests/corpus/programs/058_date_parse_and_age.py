from datetime import date

today = date(2026, 2, 1)
for m in thermal.search("Budget summary", limit=3):
    age = (today - date.fromisoformat(m.date)).days
    print(f"{m.title}: {age} days old")
