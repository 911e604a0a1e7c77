from decimal import Decimal, ROUND_HALF_UP

budget = thermal.search("Cloud spend")
over = Decimal("12") / Decimal("100")
plan = Decimal("84000.00")
actual = (plan * (1 + over)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
print(f"{len(budget)} budget memories; latest {budget[0].date if budget else '-'}")
print(f"plan {plan}, actual {actual}, overspend {actual - plan}")
