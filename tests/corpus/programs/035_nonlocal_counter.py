def make_tally():
    seen = 0
    per_source = {}

    def tally(m):
        nonlocal seen
        seen += 1
        per_source[m.source] = per_source.get(m.source, 0) + 1
        return seen

    def report():
        return seen, dict(sorted(per_source.items()))

    return tally, report


tally, report = make_tally()
for m in thermal.search("review"):
    tally(m)
print(report())
