a = {m.id for m in thermal.filter(tags="meeting", limit=100)}
b = {m.id for m in thermal.search("Kubernetes upgrade", limit=100)}
print("meeting:", len(a), "query:", len(b), "both:", len(a & b), "either:", len(a | b))
c = {m.id for m in thermal.filter(tags="cleanup", limit=100)}
print("cleanup overlap with query:", sorted(b & c)[:6])
