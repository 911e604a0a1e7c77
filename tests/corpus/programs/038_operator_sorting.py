from operator import attrgetter

rows = thermal.search("plan", limit=10)
for m in sorted(rows, key=attrgetter("source", "date")):
    print(f"{m.source:<6} {m.date} {m.title}")
