collected = []
limit = 5
while len(collected) < 12:
    rows = thermal.filter(limit=limit)
    collected = list(rows)
    if len(rows) < limit:
        break
    limit *= 2
print(len(collected), limit)
