def score(m):
    weight = {"incident": 3, "decision": 2}.get(m.tags[0], 1)
    return round(weight * m.confidence, 3)


ranked = sorted(thermal.search("2025-1", limit=50), key=lambda m: (-score(m), m.id))
for m in ranked[:6]:
    print(f"{score(m):5.2f} {m.id:<4} {m.tags[0]:<9} {m.title}")
