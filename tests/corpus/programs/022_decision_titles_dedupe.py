seen = set()
unique = []
for m in thermal.search("", tags=["decision"], limit=100):
    base = m.title.split(" (")[0]
    if base not in seen:
        seen.add(base)
        unique.append(base)
print(f"{len(unique)} distinct decisions (latest first):")
for title in unique:
    print(" *", title)
