from collections import Counter

q4 = Counter(m.tags[0] for m in thermal.filter(date_after="2025-10-01", date_before="2025-12-31"))
sep = Counter(m.tags[0] for m in thermal.filter(date_after="2025-09-01", date_before="2025-09-30"))
print("q4:", sorted(q4.items()))
print("sep:", sorted(sep.items()))
print("q4 - sep:", sorted((q4 - sep).items()))
