import csv
import io

raw = """name,dept,salary
Ann,eng,120000
Bob,ops,95000
Cid,eng,130000
Dee,sales,70000
"""
rows = list(csv.DictReader(io.StringIO(raw)))
by_dept = {}
for r in rows:
    by_dept.setdefault(r["dept"], []).append(int(r["salary"]))
for d, s in sorted(by_dept.items()):
    print(f"{d:<6} n={len(s)} avg={sum(s) / len(s):,.0f}")
