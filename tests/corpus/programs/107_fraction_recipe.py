from fractions import Fraction

recipe = {"flour": Fraction(3, 4), "sugar": Fraction(1, 3), "butter": Fraction(1, 2)}
scale = Fraction(3, 2)
for k, v in recipe.items():
    scaled = v * scale
    whole, rem = divmod(scaled.numerator, scaled.denominator)
    text = f"{whole} {Fraction(rem, scaled.denominator)}" if whole and rem else str(scaled)
    print(f"{k}: {text} cup")
