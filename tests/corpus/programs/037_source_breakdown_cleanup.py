counts = {}
for m in thermal.filter(tags="cleanup", limit=100):
    counts[m.source] = counts.get(m.source, 0) + 1
total = sum(counts.values())
for source, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    share = count / total if total else 0
    print(f"{source:<6} {count:>3} {share:6.1%}")
