from functools import partial

q4 = partial(thermal.search, date_range=("2025-10-01", "2025-12-31"))
for q in ["GPU", "Postgres", "Vendor"]:
    print(q, len(q4(q)), [m.date for m in q4(q, limit=2)])
