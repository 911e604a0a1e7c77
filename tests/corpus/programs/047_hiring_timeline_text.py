rows = sorted(thermal.search("Hiring"), key=lambda m: m.date)
if rows:
    print(f"Hiring discussions: {len(rows)}, first {rows[0].date}, last {rows[-1].date}")
    print("Plan:", rows[-1].summary)
