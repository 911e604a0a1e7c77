from abc import ABC, abstractmethod


class Formatter(ABC):
    @abstractmethod
    def fmt(self, m): ...

    def render(self, rows):
        return [self.fmt(m) for m in rows]


class Short(Formatter):
    def fmt(self, m):
        return f"{m.id}:{m.title[:20]}"


class Dated(Formatter):
    def fmt(self, m):
        return f"{m.date} {m.title}"


rows = thermal.search("restore", limit=2)
for f in (Short(), Dated()):
    print(f.render(rows))
