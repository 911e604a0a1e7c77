# Question: find postgres / database notes tagged either postgres or backup.
hits = thermal.search("pg_", tags=["postgres", "backup"], limit=100)
print("hits:", len(hits))


def norm(tags):
    return {t.strip().lower() for t in tags if t.strip()}


both = [m for m in hits if {"postgres", "backup"} <= norm(m.tags)]
only_backup = [m for m in hits if "backup" in norm(m.tags) and "postgres" not in norm(m.tags)]
neither = [m for m in hits if not norm(m.tags) & {"postgres", "backup"}]
print(f"both tags: {len(both)}, backup only: {len(only_backup)}, neither: {len(neither)}")
for m in sorted(neither, key=lambda m: m.id):
    print(f"  {m.id} tags={m.tags} title={m.title}")
