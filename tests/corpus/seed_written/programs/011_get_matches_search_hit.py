# Question: are the records returned by search the same as fetching them by id?
hits = thermal.search("vLLM", limit=100)

same = 0
different = []
for hit in hits:
    fetched = thermal.get(hit.id)
    if fetched == hit:
        same += 1
    else:
        different.append(hit.id)

print(f"{len(hits)} vLLM hits, {same} identical when fetched by id")
print("mismatches:", sorted(different))
first = min(hits, key=lambda m: m.id)
print("spot check", first.id, "->", thermal.get(first.id) == first, thermal.get(first.id) is first)
