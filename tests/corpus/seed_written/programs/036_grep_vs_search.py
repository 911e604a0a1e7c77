# Question: does grep give the same rows as search for a plain word?
for word in ["runbook", "maxmemory", "Xid"]:
    g = thermal.grep(word, limit=100)
    s = thermal.search(word, limit=100)
    g_ids = sorted(m.id for m in g)
    s_ids = sorted(m.id for m in s)
    print(
        f"{word}: grep={len(g)} search={len(s)} same_ids={g_ids == s_ids} same_order={[m.id for m in g] == [m.id for m in s]}"
    )

capped = thermal.grep("", limit=500)
print("grep('') with limit=500 returns", len(capped))
print("filter() default limit returns", len(thermal.filter()))
print("search('') default limit returns", len(thermal.search("")))
