decisions = thermal.filter(tags=["decision"], limit=100)
relevant = [d for d in decisions if "postgres" in (d.title + " " + d.content).lower()]
print(f"{len(relevant)} decisions mention 'Postgres'")
for d in sorted(relevant, key=lambda m: m.date):
    print(f"- {d.date[:10]} [{d.source}] {d.title} (confidence {d.confidence:.0%})")
