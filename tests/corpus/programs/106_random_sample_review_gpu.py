import random

pool = list(thermal.filter(tags="decision", limit=100))
random.seed(5)
sample = random.sample(pool, min(5, len(pool)))
print("reviewing", len(sample), "of", len(pool))
for m in sorted(sample, key=lambda m: m.id):
    print(" -", m.id, m.title)
