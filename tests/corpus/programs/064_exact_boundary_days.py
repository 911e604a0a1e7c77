first = thermal.filter(date_after="2025-09-01", date_before="2025-09-01")
print("on 2025-09-01:", [(m.id, m.title) for m in first])
edge = thermal.search("GPU", date_range=("2025-09-01", "2025-09-03"))
print("GPU on the first three days:", [m.id for m in edge])
