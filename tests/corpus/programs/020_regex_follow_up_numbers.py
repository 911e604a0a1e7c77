import re

numbers = []
for m in thermal.search("Follow-up", limit=20):
    match = re.search(r"Follow-up (\d+): owner (team-\d)", m.content)
    if match:
        numbers.append((int(match.group(1)), match.group(2)))
numbers.sort()
print("follow-ups:", [n for n, _ in numbers])
print("owners:", sorted({o for _, o in numbers}))
