q4 = thermal.filter(date_after="2025-10-01", date_before="2025-12-31")
q1 = thermal.filter(date_after="2026-01-01", date_before="2026-03-31")


def share(rows, tag):
    return sum(1 for m in rows if tag in m.tags) / len(rows) if rows else 0.0


for tag in ["decision", "incident", "cleanup", "meeting", "summary"]:
    print(f"{tag:<9} Q4 {share(q4, tag):5.1%}   Q1 {share(q1, tag):5.1%}")
