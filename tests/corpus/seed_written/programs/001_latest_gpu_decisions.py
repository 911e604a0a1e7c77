# Question: what are the most recent decisions about GPU allocation?
results = thermal.search("GPU allocation", limit=40)
decisions = [r for r in results if r.title and "decision" in r.title.lower()]

print(f"{len(decisions)} decision entries among {len(results)} GPU allocation hits")
for r in decisions[:5]:
    summary = r.summary or "(no summary)"
    print(f"{r.date}: {r.title} - {summary[:100]}")
