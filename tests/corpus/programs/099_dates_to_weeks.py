from datetime import date

weeks = {}
for m in thermal.filter(date_after="2025-11-01", date_before="2025-11-30"):
    iso = date.fromisoformat(m.date).isocalendar()
    weeks.setdefault(f"{iso[0]}-W{iso[1]:02d}", []).append(m.id)
for w in sorted(weeks):
    print(w, weeks[w])
