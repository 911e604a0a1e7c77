from itertools import zip_longest

by_src = {}
for m in thermal.search("review", limit=50):
    by_src.setdefault(m.source, []).append(m.id)
order = sorted(by_src)
merged = [x for group in zip_longest(*(by_src[s] for s in order)) for x in group if x]
print(order)
print(merged)
