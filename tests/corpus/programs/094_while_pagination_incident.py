seen = []
limit = 5
while True:
    page = thermal.search("incident latency", limit=limit)
    seen = [m.id for m in page]
    if not page.truncated or limit >= 40:
        break
    limit *= 2
print("fetched", len(seen), "with limit", limit)
