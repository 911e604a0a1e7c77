import re

pages = []
for m in thermal.search("On-call handover"):
    n = re.search(r"(\w+) pages", m.content)
    pages.append((m.date, n.group(1) if n else "?"))
for date, n in pages:
    print(date, n)
