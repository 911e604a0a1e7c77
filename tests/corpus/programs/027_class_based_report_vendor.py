class TopicReport:
    def __init__(self, topic):
        self.topic = topic
        self.items = []
        self.count = 0

    def add(self, memory):
        self.items.append(memory)
        self.count += 1

    def __len__(self):
        return len(self.items)

    def __repr__(self):
        return f"TopicReport({self.topic!r}, {self.count} items)"

    @property
    def newest(self):
        return max(self.items, key=lambda m: m.date) if self.items else None


report = TopicReport("vendor contract")
for m in thermal.search("vendor contract", limit=4):
    report.add(m)
print(report, len(report))
if report.newest:
    print("newest:", report.newest.date[:10], report.newest.title)
