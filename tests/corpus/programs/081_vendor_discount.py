import re

for m in thermal.search("discount"):
    pct = re.search(r"(\d+)% discount", m.content)
    print(m.date, pct.group(1) + "%" if pct else "n/a")
