import re
from collections import Counter

words = Counter()
stop = {"the", "a", "to", "of", "and", "on", "in", "for", "by", "at", "is", "with", "status", "owner"}
for m in list(thermal.search("decision", limit=50)) + list(thermal.search("", tags=["decision"], limit=50)):
    for w in re.findall(r"[a-z][a-z0-9]+", m.content.lower()):
        if w not in stop:
            words[w] += 1
print(words.most_common(8))
