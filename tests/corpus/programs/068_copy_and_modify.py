import copy

base = {"query": "cleanup", "tags": ["cleanup"], "limit": 3}
variants = []
for tag in ["cleanup", "incident"]:
    v = copy.deepcopy(base)
    v["tags"] = [tag]
    variants.append(v)
for v in variants:
    rows = thermal.search(v["query"], tags=v["tags"], limit=v["limit"])
    print(v["tags"], [m.id for m in rows])
print("base untouched:", base["tags"])
