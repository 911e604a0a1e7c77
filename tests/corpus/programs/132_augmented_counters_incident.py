class Tally:
    def __init__(self):
        self.total = 0
        self.by_source = {}
        self.chars = 0


tally = Tally()
for m in thermal.search("incident latency", limit=40):
    tally.total += 1
    tally.by_source[m.source] = tally.by_source.get(m.source, 0)
    tally.by_source[m.source] += 1
    tally.chars += len(m.content)
print(tally.total, dict(sorted(tally.by_source.items())), tally.chars)
