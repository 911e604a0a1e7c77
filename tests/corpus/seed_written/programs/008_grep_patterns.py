# Question: find notes matching a few loose patterns.
patterns = ["GPU.*allocation", "Decision:.*GPU", "rolled.+back", "disk_usage.*85%"]

for pattern in patterns:
    hits = thermal.grep(pattern, limit=100)
    print(f"{pattern!r}: {len(hits)} hits")
    newest = sorted(hits, key=lambda m: (m.date or "", m.id), reverse=True)[:3]
    for m in newest:
        print(f"    {m.date} {m.id} {m.title}")
