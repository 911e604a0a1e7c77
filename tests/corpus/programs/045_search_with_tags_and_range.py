rows = thermal.search("allocation", date_range=("2025-10-01", "2025-12-31"), tags=["meeting"])
print(len(rows), "GPU allocation meetings in Q4")
for m in rows:
    print(m.date, m.title, m.tags)
