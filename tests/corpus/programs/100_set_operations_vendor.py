a = {m.id for m in thermal.filter(tags="decision", limit=100)}
b = {m.id for m in thermal.search("vendor contract", limit=100)}
print("decision:", len(a), "query:", len(b), "both:", len(a & b), "either:", len(a | b))
c = {m.id for m in thermal.filter(tags="cleanup", limit=100)}
print("cleanup overlap with query:", sorted(b & c)[:4])
