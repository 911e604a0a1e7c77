from collections import Counter

teams = Counter()
for m in thermal.filter(limit=100):
    for t in m.tags:
        if t.startswith("team-"):
            teams[t] += 1
busiest, n = teams.most_common(1)[0]
print("per team:", dict(sorted(teams.items())))
print(f"busiest: {busiest} with {n}")
