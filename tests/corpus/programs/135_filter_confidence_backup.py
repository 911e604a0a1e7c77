res = thermal.filter(min_confidence=0.6, tags="team-1", limit=50)
print("confident team-1 memories:", len(res), "of", res.total)
for m in res[:3]:
    print(f"  {m.confidence:.2f} {m.title}")
