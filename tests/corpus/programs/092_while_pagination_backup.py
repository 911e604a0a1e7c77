seen = []
limit = 3
while True:
    page = thermal.search("backup restore", limit=limit)
    seen = [m.id for m in page]
    if not page.truncated or limit >= 40:
        break
    limit *= 2
print("fetched", len(seen), "with limit", limit)
