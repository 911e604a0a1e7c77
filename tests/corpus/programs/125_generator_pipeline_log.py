def memories(query):
    for m in thermal.search(query, limit=50):
        yield m


def confident(items, threshold):
    for m in items:
        if m.confidence >= threshold:
            yield m


picked = [m.id for m in confident(memories("log retention"), 0.7)]
print(len(picked), picked[:2])
