from decimal import Decimal, ROUND_HALF_UP
import re

amounts = []
for m in thermal.grep(r"\d+%", limit=50):
    for pct in re.findall(r"(\d+)%", m.content):
        amounts.append(Decimal(pct))
if amounts:
    avg = (sum(amounts) / len(amounts)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    print("percentages:", sorted(set(int(a) for a in amounts)), "average", avg)
else:
    print("no percentages")
