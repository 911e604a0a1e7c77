import re

numbers = {}
for m in thermal.grep(r"\d+ (minutes|hours|days)", limit=50):
    for value, unit in re.findall(r"(\d+) (minutes|hours|days)", m.content):
        numbers.setdefault(unit, []).append(int(value))
for unit in sorted(numbers):
    values = numbers[unit]
    print(unit, "min", min(values), "max", max(values), "n", len(values))
