rows = [("service", "p50", "p99"), ("api", 12.5, 120.0), ("db", 3.25, 48.75), ("cache", 0.5, 2.0)]
widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
for i, r in enumerate(rows):
    print(" | ".join(str(c).rjust(w) if i else str(c).ljust(w) for c, w in zip(r, widths)))
    if i == 0:
        print("-+-".join("-" * w for w in widths))
