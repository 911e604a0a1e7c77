def parse(values):
    ok, bad = [], []
    for v in values:
        try:
            ok.append(int(v))
        except ValueError:
            bad.append(v)
        finally:
            pass
    return ok, bad


ok, bad = parse(["1", "x", "3", "4.5", "-2"])
print(ok, bad)
try:
    {}["k"]
except (KeyError, IndexError) as e:
    print("lookup failed:", repr(e))
