class MemoryView:
    def __init__(self, m):
        self.m = m

    @property
    def short_date(self):
        return self.m.date[5:]

    @property
    def is_open(self):
        return "status open" in self.m.content

    def __str__(self):
        flag = "OPEN" if self.is_open else "done"
        return f"{self.short_date} {flag:<4} {self.m.title}"


for m in thermal.search("Disk cleanup"):
    print(MemoryView(m))
