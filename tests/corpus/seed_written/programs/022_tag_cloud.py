# Question: which tags are used most, once spelling differences are cleaned up?
from collections import Counter

raw = Counter()
clean = Counter()
untagged = 0
for page_no in range(20):
    page = thermal.search("", limit=100, offset=page_no * 100)
    if not page:
        break
    for m in page:
        if not m.tags:
            untagged += 1
        for tag in m.tags:
            raw[tag] += 1
            t = tag.strip().lower()
            if t:
                clean[t] += 1

print(f"distinct raw tags: {len(raw)}, distinct cleaned tags: {len(clean)}, memories without tags: {untagged}")
print("empty tag strings:", raw[""], "whitespace-padded:", sum(n for t, n in raw.items() if t != t.strip()))
for tag, n in sorted(clean.items(), key=lambda kv: (-kv[1], kv[0]))[:15]:
    print(f"  {tag:<16}{n}")
