def fetch(query, limit=20):
    return list(thermal.search(query, limit=limit))


def group_by(items, key):
    groups = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def describe(groups):
    lines = []
    for k in sorted(groups):
        lines.append(f"{k}: {len(groups[k])}")
    return "\n".join(lines)


print(describe(group_by(fetch("log retention", 6), key=lambda m: m.source)))
