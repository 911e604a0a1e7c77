latest = {}
for m in thermal.filter(limit=100):
    if m.source not in latest:
        latest[m.source] = m
for src, m in sorted(latest.items()):
    print(f"{src}: {m.date} {m.title}")
