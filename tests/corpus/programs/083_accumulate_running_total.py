import calendar
from itertools import accumulate

months = sorted({m.date[:7] for m in thermal.filter(limit=100)})
per_month = []
for mo in months:
    year, month = int(mo[:4]), int(mo[5:])
    last = calendar.monthrange(year, month)[1]
    per_month.append(len(thermal.filter(date_after=f"{mo}-01", date_before=f"{mo}-{last:02d}")))
for mo, n, total in zip(months, per_month, accumulate(per_month)):
    print(mo, n, total)
