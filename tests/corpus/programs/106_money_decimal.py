from decimal import Decimal, ROUND_HALF_EVEN

items = [("coffee", "3.45", 2), ("bagel", "2.10", 3), ("juice", "4.99", 1)]
subtotal = sum(Decimal(p) * q for _, p, q in items)
tax = (subtotal * Decimal("0.0825")).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
for name, p, q in items:
    print(f"{name:<8}{q:>2} x {p:>5} = {Decimal(p) * q:>6}")
print(f"subtotal {subtotal}, tax {tax}, total {subtotal + tax}")
