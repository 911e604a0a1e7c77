# Question: which A100 memories are actually tagged gpu?
hits = thermal.search("A100", tags=["gpu"], limit=100)


def clean_tags(memory):
    return [t.strip().lower() for t in memory.tags if t.strip()]


tagged = [m for m in hits if "gpu" in clean_tags(m)]
untagged = [m for m in hits if "gpu" not in clean_tags(m)]

print(f"hits: {len(hits)}  tagged gpu: {len(tagged)}  not tagged gpu: {len(untagged)}")
raw_spellings = sorted({t for m in hits for t in m.tags if t.strip().lower() == "gpu"})
print("raw spellings of the gpu tag:", raw_spellings)
for m in sorted(untagged, key=lambda m: m.id):
    print(f"  untagged: {m.id} {m.title!r} tags={m.tags}")
