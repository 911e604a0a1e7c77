from collections import Counter

results = thermal.search("latency", limit=50)
by_month = Counter(r.date[:7] for r in results)
for month, count in sorted(by_month.items()):
    print(month, "#" * count, count)
