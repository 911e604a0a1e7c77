rows = thermal.search("allocation", limit=50)
rows = sorted(rows, key=lambda m: (-m.confidence, m.date))
print("\n".join(f"{m.confidence:.2f} {m.date} {m.title}" for m in rows))
