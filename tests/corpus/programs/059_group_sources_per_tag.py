from collections import defaultdict

table = defaultdict(lambda: defaultdict(int))
for m in thermal.filter(limit=100):
    kind = m.tags[0]
    table[kind][m.source] += 1
sources = sorted({s for row in table.values() for s in row})
print("kind".ljust(10) + "".join(s.rjust(7) for s in sources))
for kind in sorted(table):
    print(kind.ljust(10) + "".join(str(table[kind][s]).rjust(7) for s in sources))
