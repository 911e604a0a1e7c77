def memories(query):
    yield from thermal.search(query, limit=50)


def only_open(rows):
    return (m for m in rows if m.content.endswith("status open."))


def titles(rows):
    for m in rows:
        yield m.title


print(list(titles(only_open(memories("migration")))))
