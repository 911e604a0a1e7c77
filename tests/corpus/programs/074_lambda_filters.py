rules = {
    "high-confidence": lambda m: m.confidence >= 0.9,
    "from-email": lambda m: m.source == "email",
    "team-0": lambda m: "team-0" in m.tags,
}
rows = thermal.filter(limit=100)
for name, rule in rules.items():
    match_ids = [m.id for m in rows if rule(m)]
    print(f"{name}: {len(match_ids)}")
