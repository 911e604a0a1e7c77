import heapq

candidates = list(thermal.search("vendor contract", limit=50))
best = heapq.nlargest(4, candidates, key=lambda m: (m.confidence, m.date))
for rank, m in enumerate(best, 1):
    print(rank, f"{m.confidence:.2f}", m.date[:10], m.title)
