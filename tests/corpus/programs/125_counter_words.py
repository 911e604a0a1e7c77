from collections import Counter
import re

text = """It was the best of times, it was the worst of times, it was the age of wisdom,
it was the age of foolishness"""
words = re.findall(r"[a-z']+", text.lower())
c = Counter(words)
print(c.most_common(4))
print(len(c), sum(c.values()))
