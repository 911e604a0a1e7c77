results = thermal.search("backup restore", limit=3)
if results:
    first = thermal.get(results[0].id)
    print(first.id, first.title, first.tags)
try:
    thermal.get(999999)
except LookupError as exc:
    print("not found:", exc)
