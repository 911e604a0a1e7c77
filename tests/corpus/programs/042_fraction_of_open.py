from fractions import Fraction

rows = thermal.filter(limit=100)
open_rows = [m for m in rows if "status open" in m.content]
share = Fraction(len(open_rows), len(rows))
print(f"open: {len(open_rows)}/{len(rows)} = {share} ~ {float(share):.3f}")
