# Defensive field access on search results: which fields exist, and a confidence label.
fields = ["id", "date", "title", "summary", "source", "confidence", "owner", "priority"]
results = thermal.search("postgres", limit=5)

present = [f for f in fields if all(hasattr(m, f) for m in results)]
missing = [f for f in fields if f not in present]
print(f"{len(results)} results")
print("fields on every result:", present)
print("not available:", missing)

for m in results:
    conf = getattr(m, "confidence", None)
    owner = getattr(m, "owner", "n/a")
    label = "high" if conf is not None and conf >= 0.8 else "low"
    print(f"{m.title[:38]:38} {label:4} {type(conf).__name__} owner={owner}")
