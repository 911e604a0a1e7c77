def classify(m):
    match m.tags:
        case ["incident", team, *_]:
            return f"incident for {team}"
        case ["decision", team, "gpu"]:
            return f"GPU decision by {team}"
        case [kind, team]:
            return f"{kind} ({team})"
        case _:
            return "other"


for m in list(thermal.search("GPU", limit=4)) + list(thermal.search("rollback", limit=2)):
    print(m.id, "->", classify(m))
