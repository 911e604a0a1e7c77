from fractions import Fraction

total = thermal.count("")
tagged = len(thermal.filter(tags="incident", limit=200))
share = Fraction(tagged, total) if total > 0 else Fraction(0)
print(f"incident: {tagged}/{total} = {share} ~ {float(share):.1%}")
