import heapq

rows = thermal.filter(limit=100)
top = heapq.nlargest(5, rows, key=lambda m: (m.confidence, m.date))
for m in top:
    print(f"{m.confidence:.2f} {m.date} {m.id:<4} {m.title}")
