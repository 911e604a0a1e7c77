rows = thermal.search("Incident", limit=5)
for n, m in enumerate(rows, 1):
    print(f"{n}) {m.title} — {m.summary[:40]}...")
