a = thermal.search("GPU allocation", limit=4)
b = thermal.search("GPU allocation review", limit=4)
for x, y in zip(a, b):
    print(f"{x.id:<4} {x.date}  |  {y.id:<4} {y.date}")
