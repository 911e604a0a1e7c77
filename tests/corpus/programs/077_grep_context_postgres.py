hits = thermal.grep(r"(?i)Postgres", limit=6)
print(len(hits), "matches for Postgres; total", hits.total)
for h in hits[:3]:
    text = h.content
    i = text.lower().find("postgres")
    snippet = text[max(0, i - 20) : i + 40] if i >= 0 else text[:60]
    print(f"#{h.id} ...{snippet}...")
