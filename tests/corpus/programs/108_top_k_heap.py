import heapq

scores = {"ana": 91, "bo": 78, "cy": 85, "di": 99, "ed": 85, "fu": 60}
print(heapq.nlargest(3, scores.items(), key=lambda kv: (kv[1], kv[0])))
h = []
for name, s in scores.items():
    heapq.heappush(h, (-s, name))
print([heapq.heappop(h)[1] for _ in range(4)])
