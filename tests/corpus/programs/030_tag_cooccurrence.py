from itertools import combinations
from collections import Counter

pairs = Counter()
for m in thermal.filter(limit=100):
    for a, b in combinations(sorted(m.tags), 2):
        pairs[(a, b)] += 1
for (a, b), n in pairs.most_common(5):
    print(f"{a} + {b}: {n}")
