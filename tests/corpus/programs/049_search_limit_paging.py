all_hits = thermal.search("team", limit=100)
page_size = 15
pages = [all_hits[i : i + page_size] for i in range(0, len(all_hits), page_size)]
print(f"{len(all_hits)} hits in {len(pages)} pages")
for n, page in enumerate(pages, 1):
    print(f"page {n}: {page[0].id} .. {page[-1].id}")
