# Question: how big is the archive and how often do some words appear?
total = thermal.count()
print("total memories:", total)
print("count(None):", thermal.count(None))
print("count(''):", thermal.count(""))

for word in ["GPU", "gpu", "Gpu", "incident", "Zoë", "ZOË", "greenfin", "100%"]:
    n = thermal.count(word)
    share = n / total * 100
    print(f"{word!r:>12}: {n:>4}  ({share:.1f}%)")
