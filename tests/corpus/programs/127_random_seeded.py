import random

random.seed(2024)
deck = [f"{r}{s}" for s in "SHDC" for r in "A23456789TJQK"]
random.shuffle(deck)
print(deck[:5])
print(random.randint(1, 100), round(random.random(), 6), random.choice(["x", "y", "z"]))
print(sorted(random.sample(range(50), 5)))
