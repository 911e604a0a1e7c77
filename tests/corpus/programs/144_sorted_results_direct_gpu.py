results = thermal.search("GPU allocation", limit=7)
for r in sorted(results, key=lambda m: m.date):
    print(r.date[:10], r.id)
print(bool(results), len(results[:2]), results[0].title if results else None)
