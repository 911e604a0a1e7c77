window = ("2025-11-01", "2025-11-30")
res = thermal.search("review", date_range=window)
print(f"'review' in {window[0]}..{window[1]}: {len(res)}")
for m in res:
    assert window[0] <= m.date <= window[1]
    print(" ", m.date, m.title)
