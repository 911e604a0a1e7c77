class Finding:
    def __init__(self, memory, severity: str) -> None:
        self.memory = memory
        self.severity = severity

    def __lt__(self, other):
        order = {"high": 0, "medium": 1, "low": 2}
        return (order[self.severity], self.memory.date) < (order[other.severity], other.memory.date)

    def __str__(self):
        return f"[{self.severity}] {self.memory.date[:10]} {self.memory.title}"


findings = []
for m in thermal.filter(tags=["incident"], limit=40):
    sev = "high" if "rolled back" in m.content or "4 s" in m.content else "medium"
    if m.confidence < 0.7:
        sev = "low"
    findings.append(Finding(m, sev))
for f in sorted(findings)[:2]:
    print(f)
