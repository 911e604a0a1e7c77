class Base:
    def __init__(self, name):
        self.name = name
        self.rows = []

    def load(self):
        return self

    def __len__(self):
        return len(self.rows)


class TagReport(Base):
    def __init__(self, tag):
        super().__init__(f"tag:{tag}")
        self.tag = tag

    def load(self):
        self.rows = thermal.search("", tags=[self.tag], limit=100)
        return super().load()


for tag in ["summary", "meeting", "gpu"]:
    r = TagReport(tag).load()
    print(r.name, len(r))
