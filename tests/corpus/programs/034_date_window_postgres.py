from datetime import datetime, timedelta

end = datetime.strptime("2026-01-15", "%Y-%m-%d")
start = end - timedelta(days=21)
window = thermal.search(
    "Postgres migration", since=start.strftime("%Y-%m-%d"), until=end.strftime("%Y-%m-%d"), limit=20
)
print(f"{start:%Y-%m-%d} .. {end:%Y-%m-%d}: {len(window)} memories")
for m in window:
    age = (end - datetime.strptime(m.date[:10], "%Y-%m-%d")).days
    print(f"  {age:>3} days ago  {m.title}")
