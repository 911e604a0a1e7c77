fields = ("id", "date", "title", "source", "confidence", "kind", "tier", "owner")
m = next(iter(thermal.search("budget", limit=1)), None)
if m is None:
    print("nothing")
else:
    for f in fields:
        print(f, "=", getattr(m, f, "n/a"))
