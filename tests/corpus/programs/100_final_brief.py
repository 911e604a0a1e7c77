n_total = len(thermal.filter(limit=1000))
n_open = sum(1 for m in thermal.filter(limit=1000) if "status open" in m.content)
latest = thermal.filter(limit=1)[0]
print(f"Archive: {n_total} memories, {n_open} open follow-ups.")
print(f"Latest: {latest.title} ({latest.date}, {latest.source}).")
print(
    f"GPU: {thermal.count('GPU')}  Postgres: {thermal.count('Postgres')}  Incidents: {len(thermal.search('', tags=['incident']))}"
)
