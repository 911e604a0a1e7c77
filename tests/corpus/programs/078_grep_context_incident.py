hits = thermal.grep(r"(?i)incident", limit=10)
print(len(hits), "matches for incident; total", hits.total)
for h in hits[:5]:
    text = h.content
    i = text.lower().find("incident")
    snippet = text[max(0, i - 20) : i + 40] if i >= 0 else text[:60]
    print(f"#{h.id} ...{snippet}...")
