rows = sorted(thermal.filter(limit=100), key=lambda m: (-len(m.content), m.id))
for m in rows[:3]:
    print(len(m.content), m.id, m.title)
print("shortest:", min(len(m.content) for m in rows))
