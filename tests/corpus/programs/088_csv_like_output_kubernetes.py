header = ["id", "date", "source", "confidence", "title"]
print(",".join(header))
for m in thermal.filter(tags="meeting", limit=6):
    row = [str(m.id), m.date[:10], m.source, "%.2f" % m.confidence, '"' + m.title.replace('"', "'") + '"']
    print(",".join(row))
