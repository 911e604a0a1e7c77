# Question: give me a report of the backup runs in December 2025.
hits = thermal.search("backup", date_range=("2025-12-01", "2025-12-31"), limit=100)

in_december = [m for m in hits if m.date and m.date[:7] == "2025-12"]
failed = [m for m in in_december if "FAILED" in (m.content or "")]

print(f"search returned {len(hits)} rows, {len(in_december)} of them dated December 2025")
print(f"failed runs in December: {len(failed)}")
for m in sorted(failed, key=lambda m: (m.date, m.id)):
    print(f"  {m.date}  {m.id}  {m.title}")
