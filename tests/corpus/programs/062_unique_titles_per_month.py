from itertools import groupby

rows = sorted(thermal.filter(limit=100), key=lambda m: m.date)
for month, group in groupby(rows, key=lambda m: m.date[:7]):
    titles = [m.title.split(" (")[0] for m in group]
    print(month, len(titles), titles[0], "...", titles[-1])
