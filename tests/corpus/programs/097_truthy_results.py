for q in ["egress", "blockchain"]:
    rows = thermal.search(q)
    if rows:
        print(f"{q}: {len(rows)} (latest {rows[0].date})")
    else:
        print(f"{q}: nothing found")
