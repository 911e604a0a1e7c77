from collections import Counter, defaultdict

pairs = Counter()
by_tag = defaultdict(set)
for m in thermal.search("Kubernetes upgrade", limit=50):
    tags = sorted(m.tags)
    for i, a in enumerate(tags):
        by_tag[a].add(m.id)
        for b in tags[i + 1 :]:
            pairs[(a, b)] += 1
for (a, b), c in pairs.most_common(6):
    print(a, "+", b, "=", c)
print({t: len(ids) for t, ids in sorted(by_tag.items())})
