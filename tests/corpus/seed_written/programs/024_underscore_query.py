# Question: which notes talk about the disk_usage metric?
hits = thermal.search("disk_usage", limit=100)
exact = [m for m in hits if "disk_usage" in m.content]
loose = [m for m in hits if "disk_usage" not in m.content]

print(f"{len(hits)} hits for disk_usage, {len(exact)} contain it literally")
for m in sorted(loose, key=lambda m: m.id):
    print(f"  loose match: {m.id} {m.title!r}: {m.content[:70]}")

pcts = []
for m in exact:
    marker = "disk_usage /backup "
    if marker in m.content:
        tail = m.content.split(marker, 1)[1]
        pcts.append(int(tail.split("%", 1)[0]))
if pcts:
    print(
        f"/backup usage across {len(pcts)} reports: min {min(pcts)}%, max {max(pcts)}%, over 85%: {sum(p > 85 for p in pcts)}"
    )
