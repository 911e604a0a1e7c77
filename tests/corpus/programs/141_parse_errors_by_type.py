# Parse a batch of raw values and report which inputs failed, grouped by the error type.
raw = ["12", "3.5", "", "seven", None, "1e3", [1, 2], "0x1f", " -4 ", "4,5"]


def parse(value):
    if value is None:
        raise TypeError("no value given")
    if not hasattr(value, "strip"):
        raise TypeError(f"cannot parse a {type(value).__name__}")
    value = value.strip()
    if value.startswith("0x"):
        return int(value, 16)
    try:
        return int(value)
    except ValueError:
        return float(value)


errors = {}
parsed = []
for item in raw:
    try:
        parsed.append(parse(item))
    except (ValueError, TypeError) as e:
        errors.setdefault(type(e).__name__, []).append((repr(item), str(e)))

print("parsed:", parsed)
for name in sorted(errors):
    print(f"{name} ({len(errors[name])}):")
    for item, message in errors[name]:
        print(f"  {item:10} {message}")
