results = thermal.search(query="budget", date_range=("2025-10-01", "2026-01-31"), limit=2)
for r in results:
    print(f"{r.date}: {r.title} - {r.summary[:100]}")
print("shown", len(results), "of", results.total)
