import re
from collections import Counter

LOG = """2025-12-01 10:00:01 INFO api request id=1 ms=120
2025-12-01 10:00:02 WARN api slow request id=2 ms=2300
2025-12-01 10:00:05 ERROR db timeout id=3
2025-12-01 10:01:00 INFO api request id=4 ms=90
2025-12-01 10:02:13 ERROR api 502 upstream id=5"""
pattern = re.compile(r"^(\S+ \S+) (INFO|WARN|ERROR) (\w+) (.*)$")
levels = Counter()
errors = []
for line in LOG.splitlines():
    m = pattern.match(line)
    if not m:
        continue
    ts, level, comp, msg = m.groups()
    levels[level] += 1
    if level == "ERROR":
        errors.append(f"{ts[11:]} {comp}: {msg}")
print(dict(levels))
print("\n".join(errors))
