def first_mention(term):
    rows = thermal.search(term, limit=100)
    return min(rows, key=lambda m: m.date) if rows else None


for term in ["A100", "Postgres 16", "cold storage", "SRE"]:
    m = first_mention(term)
    print(term, "->", (m.date, m.id) if m else None)
