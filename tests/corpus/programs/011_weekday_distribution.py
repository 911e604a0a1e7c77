from datetime import datetime
from collections import Counter

days = Counter()
for m in thermal.filter(limit=200):
    d = datetime.strptime(m.date, "%Y-%m-%d")
    days[d.strftime("%A")] += 1
order = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
for day in order:
    print(f"{day:<10}{'#' * days[day]} {days[day]}")
