incidents = {m.id for m in thermal.search("", tags=["incident"], limit=100)}
rollbacks = {m.id for m in thermal.search("rollback", limit=100)}
print("incidents:", len(incidents))
print("rollbacks:", len(rollbacks))
print("both:", sorted(incidents & rollbacks, key=lambda x: int(x[1:])))
print("incident but no rollback:", len(incidents - rollbacks))
