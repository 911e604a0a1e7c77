from collections import defaultdict

open_items = defaultdict(list)
for m in thermal.filter(limit=100):
    if "status open" in m.content:
        team = next((t for t in m.tags if t.startswith("team-")), "unassigned")
        open_items[team].append(m.id)
for team in sorted(open_items):
    ids = open_items[team]
    print(f"{team}: {len(ids)} open -> {', '.join(ids[:4])}{' ...' if len(ids) > 4 else ''}")
