after = thermal.filter(date_after="2026-01-01")
before = thermal.filter(date_before="2025-09-30")
print("from 2026:", len(after), [m.id for m in after][:5])
print("through September:", len(before), before[-1].date if before else None)
