from collections import namedtuple

Row = namedtuple("Row", "id date src")
rows = [Row(m.id, m.date, m.source) for m in thermal.search("Log retention")]
for r in rows:
    print(r)
print(len(rows), "rows;", "fields:", ("id", "date", "src"))
