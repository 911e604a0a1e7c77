from datetime import datetime, timedelta

start = datetime(2026, 1, 30, 9, 30)
for i in range(4):
    t = start + timedelta(days=7 * i)
    print(t.strftime("%a %Y-%m-%d %H:%M"), t.isocalendar()[1])
print((datetime(2026, 3, 1) - start).days, "days to March")
