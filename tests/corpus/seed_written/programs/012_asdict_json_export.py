# Question: export the loki incidents as JSON for the weekly report.
import json
from dataclasses import asdict

hits = thermal.search("loki", limit=100)
incidents = [m for m in hits if (m.title and "incident" in m.title.lower()) or (m.title and "SEV" in m.title)]
records = [asdict(m) for m in sorted(incidents, key=lambda m: m.id)]

print(json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False))
print(f"exported {len(records)} records")
