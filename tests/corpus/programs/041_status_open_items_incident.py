open_items = []
for m in thermal.grep("status open", limit=100):
    owner = "unknown"
    for word in m.content.split():
        if word.startswith("team-"):
            owner = word.rstrip(",.")
    open_items.append({"id": m.id, "owner": owner, "title": m.title})
owners = sorted(set(i["owner"] for i in open_items))
for owner in owners:
    mine = [i for i in open_items if i["owner"] == owner]
    print(owner, len(mine), [i["id"] for i in mine][:5])
