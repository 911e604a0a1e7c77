seen = {}
dupes = []
for m in thermal.search("budget", limit=50):
    key = m.title.split(" (")[0].lower()
    if key in seen:
        dupes.append((key, seen[key], m.id))
    else:
        seen[key] = m.id
print(len(seen), "distinct topics,", len(dupes), "repeats")
for key, first, again in dupes[:2]:
    print(f"  {key}: {first} -> {again}")
