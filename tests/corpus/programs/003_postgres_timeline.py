hits = thermal.search("postgres")
hits = sorted(hits, key=lambda m: m.date)
print("Postgres timeline (oldest first):")
for i, m in enumerate(hits, start=1):
    status = "open" if "status open" in m.content else "done"
    print(f"{i:>2}. {m.date}  {m.title:<45} {status}")
