lines = ["# Review: cleanup", ""]
res = thermal.search("cleanup", limit=4)
lines.append(f"{res.total} matching memories; showing {len(res)}.")
lines.append("")
for m in res:
    tags = ", ".join(m.tags)
    lines.append(f"* **{m.title}** ({m.date[:10]}, {m.source}; {tags})")
    lines.append(f"  {m.summary}")
print("\n".join(lines))
