import csv
from io import StringIO

out = StringIO()
fields = ["id", "date", "confidence"]
w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
w.writeheader()
for m in thermal.search("", tags=["summary"], limit=4):
    w.writerow({"id": m.id, "date": m.date, "confidence": m.confidence})
print(out.getvalue().strip())
