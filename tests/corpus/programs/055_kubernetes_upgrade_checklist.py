steps = []
for m in thermal.search("Kubernetes upgrade"):
    text = m.summary.lower()
    for keyword in ("staging", "freeze", "region", "1.31"):
        if keyword in text and keyword not in steps:
            steps.append(keyword)
print("checklist:", steps)
print("memories:", [m.id for m in thermal.search("Kubernetes upgrade")])
