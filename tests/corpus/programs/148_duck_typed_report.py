from collections import Counter, OrderedDict
from datetime import date

values = [
    42,
    3.14159,
    "text",
    [1, 2, 3],
    {"a": 1, "b": 2},
    (4, 5),
    {7, 8},
    None,
    True,
    Counter("hello"),
    date(2025, 3, 1),
    OrderedDict(x=1),
]


def describe(v):
    kind = type(v).__name__
    if v is None:
        return f"{kind}: nothing"
    if hasattr(v, "items"):
        keys = ", ".join(str(k) for k in sorted(v))
        return f"{kind} mapping with keys {keys}"
    if isinstance(v, str):
        return f"{kind} of length {len(v)}"
    if hasattr(v, "__iter__"):
        return f"{kind} with {len(v)} items, sum {sum(v)}"
    if hasattr(v, "isoformat"):
        return f"{kind} {v.isoformat()}"
    if isinstance(v, float):
        return f"{kind} {v:.2f}"
    return f"{kind} {v!r}"


for v in values:
    print(describe(v))
print(sorted({type(v).__name__ for v in values}))
print(type(Counter()).__name__, Counter.__name__, type(values[9]) == Counter)  # noqa: E721
