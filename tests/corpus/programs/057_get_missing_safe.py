def describe(mid):
    m = thermal.get(mid)
    if m is None:
        return f"{mid}: (no such memory)"
    return f"{mid}: {m.title} on {m.date}"


for mid in ["m1", "m60", "m61", "M1", ""]:
    print(describe(mid))
