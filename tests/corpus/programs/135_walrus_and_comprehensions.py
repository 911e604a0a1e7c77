data = [3, 8, 1, 9, 4, 7]
if (n := len(data)) > 5:
    print(f"{n} items")
squares = {x: x * x for x in data if x % 2}
print(squares)
print([y for x in data if (y := x * 10) > 50])
print(sorted(data, reverse=True)[:3], min(data, default=None))
