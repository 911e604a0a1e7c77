from collections import Counter

months = Counter(m.date[:7] for m in thermal.filter(limit=100))
for month, n in sorted(months.items()):
    bar = "█" * n
    print(f"{month} {n:>2} {bar}")
