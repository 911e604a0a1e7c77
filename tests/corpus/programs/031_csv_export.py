import csv
import io

buf = io.StringIO()
writer = csv.writer(buf, lineterminator="\n")
writer.writerow(["id", "date", "source", "title"])
for m in thermal.search("cleanup", limit=6):
    writer.writerow([m.id, m.date, m.source, m.title])
print(buf.getvalue(), end="")
