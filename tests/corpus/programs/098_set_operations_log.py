a = {m.id for m in thermal.filter(tags="cleanup", limit=100)}
b = {m.id for m in thermal.search("log retention", limit=100)}
print("cleanup:", len(a), "query:", len(b), "both:", len(a & b), "either:", len(a | b))
c = {m.id for m in thermal.filter(tags="decision", limit=100)}
print("decision overlap with query:", sorted(b & c)[:2])
