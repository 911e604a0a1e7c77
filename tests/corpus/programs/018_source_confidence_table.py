from collections import defaultdict

acc = defaultdict(list)
for m in thermal.filter(limit=100):
    acc[m.source].append(m.confidence)
print(f"{'source':<8}{'n':>4}{'avg':>7}{'max':>6}")
for src in sorted(acc):
    vals = acc[src]
    print(f"{src:<8}{len(vals):>4}{sum(vals) / len(vals):>7.3f}{max(vals):>6.2f}")
