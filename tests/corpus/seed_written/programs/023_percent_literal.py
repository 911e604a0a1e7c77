# Question: which notes mention the '%' LIKE problem, and what does searching "100%" give?
hits = thermal.search("100%", limit=100)
literal = [m for m in hits if "100%" in (m.content or "") or "100%" in (m.title or "")]
print(f"search('100%') returned {len(hits)} rows; {len(literal)} really contain '100%'")
for m in sorted(literal, key=lambda m: m.id):
    print(f"  {m.id} {m.title}")

pct = thermal.search("'%'", limit=100)
print(f"titles/contents containing the text '%' in quotes: {len(pct)}")
for m in sorted(pct, key=lambda m: (m.date, m.id))[:5]:
    print(f"  {m.date} {m.title}")
