# Question: show me the raw record for the January GPU allocation decision.
hits = thermal.search("GPU allocation for January", limit=5)
for m in hits:
    print(repr(m))
    print()

m = thermal.get("mem-0004")
print(repr(m))
print(str(m) == repr(m))
