def newest_first(items: list, k: int = 5) -> list:
    return sorted(items, key=lambda m: m.date, reverse=True)[:k]


def line(m) -> str:
    return f"{m.date[:10]} {m.title}"


memories: list = list(thermal.search("cleanup", limit=40))
for text in map(line, newest_first(memories, 4)):
    print(text)
