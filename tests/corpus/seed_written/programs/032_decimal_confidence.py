# Question: what is the exact average confidence of the December GPU decisions?
from decimal import ROUND_HALF_UP, Decimal

hits = thermal.search("GPU allocation", date_range=("2025-12-01", "2025-12-31"), limit=100)
december = [m for m in hits if (m.date or "").startswith("2025-12") and m.source == "council"]

values = [Decimal(str(m.confidence)) for m in december if m.confidence is not None]
print(f"{len(december)} council GPU allocation notes in December, {len(values)} with confidence")
total = sum(values, Decimal("0"))
print("sum:", total)
if values:
    avg = (total / len(values)).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    print("average:", avg)
    print("float average:", round(sum(float(v) for v in values) / len(values), 3))
