# Question: build a decision log for the council, newest first, with one line per decision.
class DecisionLog:
    def __init__(self, api, topic):
        self.topic = topic
        hits = api.search(topic, limit=100)
        self.entries = [m for m in hits if self.is_decision(m)]

    @staticmethod
    def is_decision(m):
        title = (m.title or "").lower()
        return title.startswith("decision") or title.startswith("decided")

    def __len__(self):
        return len(self.entries)

    def lines(self):
        ordered = sorted(self.entries, key=lambda m: ((m.date or "")[:10], m.id), reverse=True)
        for m in ordered:
            who = m.source or "unknown"
            yield f"{(m.date or '????')[:10]}  {who:<8}  {m.title}"


for topic in ["GPU", "greenfin", "backup"]:
    log = DecisionLog(thermal, topic)
    print(f"== {topic}: {len(log)} decisions")
    for line in list(log.lines())[:6]:
        print(line)
