# Question: how many minutes of incident time did each service rack up?
import re
from collections import defaultdict
from functools import reduce

hits = thermal.search("Duration", limit=100)
DURATION = r"Duration (\d+) min"
SERVICE = r"^(?:Incident: |incident: .*\(|\[SEV\d\] |SEV\d - )([a-z-]+)"

minutes = defaultdict(list)
for m in hits:
    found = re.search(DURATION, m.content)
    svc = re.search(SERVICE, m.title or "")
    if found and svc:
        minutes[svc.group(1)].append(int(found.group(1)))

total = reduce(lambda acc, values: acc + sum(values), minutes.values(), 0)
print(f"{len(hits)} notes with a duration, {total} incident minutes in total")
for svc in sorted(minutes, key=lambda s: (-sum(minutes[s]), s)):
    values = minutes[svc]
    print(f"  {svc:<14} {sum(values):>5} min over {len(values)} incidents (worst {max(values)})")
