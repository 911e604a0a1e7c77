res = thermal.search("GPU allocation", limit=2)
print("total", res.total, "shown", len(res), "truncated", res.truncated)
print("plan:", res.plan)
if res.truncated:
    more = thermal.search("GPU allocation", limit=res.total if res.total > 0 else 50)
    print("fetched all:", len(more))
print("ids:", [m.id for m in res[:3]])
