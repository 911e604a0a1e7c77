results = thermal.search("GPU allocation", limit=5)
print(f"Latest {len(results)} memories about GPU allocation:")
for r in results:
    print(f"- {r.date}: {r.title} [{', '.join(r.tags)}]")
