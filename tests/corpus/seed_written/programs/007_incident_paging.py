# Question: walk through all incident memories, 10 at a time.
page_size = 10
offset = 0
seen = []
page_no = 0
for _ in range(100):
    page = thermal.search("incident", limit=page_size, offset=offset)
    if not page:
        break
    page_no += 1
    print(f"page {page_no}: offset={offset} rows={len(page)} newest={page[0].date} oldest={page[-1].date}")
    seen.extend(page)
    offset += page_size

ids = [m.id for m in seen]
print(f"total rows: {len(seen)}, distinct ids: {len(set(ids))}, count(): {thermal.count('incident')}")
