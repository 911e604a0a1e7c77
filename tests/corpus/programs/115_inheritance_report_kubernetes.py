class Section:
    def __init__(self, title):
        self.title = title
        self.lines = []

    def add(self, text):
        self.lines.append(text)

    def render(self):
        return "\n".join([self.title, "-" * len(self.title), *self.lines])


class MemorySection(Section):
    def __init__(self, title, memories):
        super().__init__(title)
        for m in memories:
            self.add(f"{m.date[:10]}: {m.title}")

    def render(self):
        return super().render() + f"\n({len(self.lines)} items)"


print(MemorySection("Kubernetes upgrade", thermal.search("Kubernetes upgrade", limit=6)).render())
