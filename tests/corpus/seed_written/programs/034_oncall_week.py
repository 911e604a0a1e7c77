# Question: what was recorded during the on-call week of 2025-12-29 .. 2026-01-04?
rows = thermal.filter(date_after="2025-12-29", date_before="2026-01-04", limit=100)
print(f"{len(rows)} memories between 2025-12-29 and 2026-01-04 (string bounds)")

rows_incl = thermal.filter(date_after="2025-12-29", date_before="2026-01-04 23:59:59", limit=100)
extra = sorted({r.id for r in rows_incl} - {r.id for r in rows})
print(f"with an end-of-day bound: {len(rows_incl)} (extra: {extra})")

by_kind = {}
for r in rows_incl:
    title = (r.title or "").lower()
    if "incident" in title or "sev" in title:
        kind = "incident"
    elif "deploy" in title or "rollout" in title:
        kind = "deploy"
    elif "backup" in title:
        kind = "backup"
    else:
        kind = "other"
    by_kind.setdefault(kind, []).append(r.id)

for kind in sorted(by_kind):
    print(f"{kind}: {sorted(by_kind[kind])}")
