res = thermal.filter(min_confidence=0.7, tags="cleanup", limit=50)
print("confident cleanup memories:", len(res), "of", res.total)
for m in res[:4]:
    print(f"  {m.confidence:.2f} {m.title}")
