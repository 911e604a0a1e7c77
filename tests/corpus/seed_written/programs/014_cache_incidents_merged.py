# Question: everything about redis or the embedding cache, most confident first.
redis_hits = thermal.search("redis", limit=100)
cache_hits = thermal.search("cache", limit=100)

combined = redis_hits + cache_hits
unique = {}
for m in combined:
    unique.setdefault(m.id, m)

print(f"redis: {len(redis_hits)}, cache: {len(cache_hits)}, combined: {len(combined)}, unique: {len(unique)}")


def by_confidence(m):
    conf = m.confidence if m.confidence is not None else -1.0
    return (-conf, m.date or "", m.id)


for m in sorted(unique.values(), key=by_confidence)[:8]:
    print(f"{m.confidence!s:>5}  {m.date:<26} {m.title}")
