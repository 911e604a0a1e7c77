import json

rows = thermal.search("kubernetes", limit=3)
payload = [{"id": m.id, "date": m.date, "title": m.title, "tags": m.tags, "confidence": m.confidence} for m in rows]
print(json.dumps(payload, indent=2))
