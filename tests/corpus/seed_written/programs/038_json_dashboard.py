# Question: produce a small JSON status blob for the ops dashboard.
import json

backups = thermal.search("pg_dump", date_range=("2026-01-01", "2026-01-31"), limit=100)
jan_backups = [m for m in backups if (m.date or "") >= "2026-01-01"]
failed = [m.id for m in jan_backups if "FAILED" in m.content]

blob = {
    "archive_size": thermal.count(),
    "incidents_all_time": thermal.count("Severity"),
    "january_backups": {"runs": len(jan_backups), "failed": sorted(failed)},
    "open_gpu_requests": len(thermal.search("Pending council", limit=100)),
    "latest_decision": None,
}
decisions = thermal.grep("Decision:", limit=1)
if decisions:
    d = decisions[0]
    blob["latest_decision"] = {"id": d.id, "date": d.date, "title": d.title}

print(json.dumps(blob, indent=2, sort_keys=True))
