def status(m):
    match m.content.rsplit("status ", 1)[-1].rstrip("."):
        case "open":
            return "needs follow-up"
        case "done":
            return "closed"
        case other:
            return f"unknown ({other})"


for m in thermal.search("Vendor contract"):
    print(m.date, status(m))
