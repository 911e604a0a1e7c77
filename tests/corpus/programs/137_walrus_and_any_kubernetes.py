res = thermal.search("Kubernetes upgrade", limit=40)
if (count := len(res)) > 0:
    print(count, "results; any rollback:", any("rolled back" in m.content for m in res))
    print("all recent:", all(m.date >= "2025-09-01" for m in res))
else:
    print("none")
