import calendar

print(calendar.isleap(2024), calendar.isleap(2100))
print(calendar.monthrange(2026, 2))
print([calendar.day_name[i] for i in range(3)])
print(calendar.weekday(2026, 1, 1), calendar.month_abbr[7])
