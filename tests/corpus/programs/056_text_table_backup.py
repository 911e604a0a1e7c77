rows = [(m.id, m.date[:10], m.source, m.title[:30]) for m in thermal.filter(tags="team-1", limit=3)]
widths = [max(len(str(r[i])) for r in rows) if rows else 2 for i in range(4)]
header = ("id", "date", "source", "title")
print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
for r in rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
