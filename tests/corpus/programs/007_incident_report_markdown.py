incidents = thermal.search("", tags=["incident"])
lines = ["# Incident digest", ""]
for m in incidents:
    lines.append(f"## {m.title}")
    lines.append(f"*{m.date} via {m.source}, confidence {m.confidence:.0%}*")
    lines.append("")
    lines.append(m.summary)
    lines.append("")
print("\n".join(lines).rstrip())
