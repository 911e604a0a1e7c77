# Question: when did each source last write something?
sources = [
    "council",
    "jr-ops",
    "jr-research",
    "manual",
    "slack-import",
    "incident-bot",
    "Incident-Bot",
    "cron",
    "email",
    "ci",
    "pagerduty",
]

latest = {}
for source in sources:
    rows = thermal.filter(source=source, limit=1)
    latest[source] = rows[0] if rows else None

for source in sorted(sources):
    m = latest[source]
    if m is None:
        print(f"{source:<13} never")
    else:
        print(f"{source:<13} {m.date}")
