# Question: how many memories were written per month?
from collections import defaultdict

per_month = defaultdict(list)

# filter() has no offset, so page through search("") instead
everything = []
for page_no in range(10):
    page = thermal.search("", limit=100, offset=page_no * 100)
    if not page:
        break
    everything.extend(page)

for m in everything:
    key = m.date[:7] if m.date else "unknown"
    per_month[key].append(m.id)

for month in sorted(per_month):
    print(f"{month}: {len(per_month[month])}")
print("total:", len(everything))
