# Question: what did the council record during December 2025?
rows = thermal.filter(source="council", date_after="2025-12-01", date_before="2025-12-31 23:59:59")

print(f"{len(rows)} council memories in December")
for r in sorted(rows, key=lambda r: (r.date, r.id)):
    conf = "n/a" if r.confidence is None else f"{r.confidence:.2f}"
    print(f"- {r.date[:10]} [{conf}] {r.title}")

wrong_case = thermal.filter(source="Council", date_after="2025-12-01")
print("source='Council' matches:", len(wrong_case))
