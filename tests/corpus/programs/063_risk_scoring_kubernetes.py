weights = {"incident": 3, "decision": 1, "cleanup": 1, "meeting": 0.5, "summary": 0.5}


def score(m):
    total = 0.0
    for t in m.tags:
        total += weights.get(t, 0)
    if "rolled back" in m.content:
        total += 2
    return round(total * m.confidence, 2)


scored = sorted(((score(m), m.title) for m in thermal.search("Kubernetes upgrade", limit=40)), reverse=True)
for s, title in scored[:6]:
    print(f"{s:5.2f}  {title}")
