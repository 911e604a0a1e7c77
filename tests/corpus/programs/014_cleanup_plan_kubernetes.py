plan = []
for m in thermal.filter(tags=["cleanup"], limit=50):
    action = "review"
    if "older than" in m.content or "Delete" in m.content:
        action = "delete"
    elif "rotate" in m.content.lower() or "Keep" in m.content:
        action = "rotate"
    plan.append((m.date[:10], action, m.title))
plan.sort()
for date, action, title in plan[:6]:
    print(f"{date}  {action:<7} {title}")
print("actions:", {a: sum(1 for p in plan if p[1] == a) for a in ("delete", "rotate", "review")})
