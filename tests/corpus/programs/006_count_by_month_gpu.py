from collections import Counter

results = thermal.search("GPU allocation", limit=50)
by_month = Counter(r.date[:7] for r in results)
for month, count in sorted(by_month.items()):
    print(month, "#" * count, count)
