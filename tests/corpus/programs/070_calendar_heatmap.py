import calendar

dec = [int(m.date[8:]) for m in thermal.filter(date_after="2025-12-01", date_before="2025-12-31")]
print(calendar.month_name[12], 2025, f"({len(dec)} memories)")
for week in calendar.monthcalendar(2025, 12):
    print(" ".join(("*" if d in dec else ".") if d else " " for d in week))
