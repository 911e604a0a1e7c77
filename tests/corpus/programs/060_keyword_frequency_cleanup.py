import re
from collections import Counter

stop = {"the", "and", "a", "of", "to", "on", "in", "for", "with", "by", "is", "at", "first", "next"}
words = Counter()
for m in thermal.search("cleanup", limit=30):
    for w in re.findall(r"[a-z][a-z0-9-]+", (m.title + " " + m.content).lower()):
        if w not in stop and len(w) > 3:
            words[w] += 1
print(words.most_common(4))
