def memories(query):
    for m in thermal.search(query, limit=50):
        yield m


def confident(items, threshold):
    for m in items:
        if m.confidence >= threshold:
            yield m


picked = [m.id for m in confident(memories("vendor contract"), 0.5)]
print(len(picked), picked[:4])
