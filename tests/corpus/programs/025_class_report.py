class Report:
    def __init__(self, title):
        self.title = title
        self.sections = []

    def section(self, heading, rows):
        self.sections.append((heading, rows))

    def render(self):
        out = [self.title, "=" * len(self.title)]
        for heading, rows in self.sections:
            out.append(f"{heading} ({len(rows)})")
            out.extend(f"  {r.date} {r.title}" for r in rows)
        return "\n".join(out)


rep = Report("Infra review")
rep.section("Kubernetes", thermal.search("Kubernetes upgrade", limit=3))
rep.section("Backups", thermal.search("backup", limit=3))
print(rep.render())
