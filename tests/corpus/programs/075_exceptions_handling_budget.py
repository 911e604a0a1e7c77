errors = 0
ok = 0
for memory_id in (1, 2, 3, 500000 + 2):
    try:
        m = thermal.get(memory_id)
        ok += 1
    except LookupError:
        errors += 1
    except ValueError as exc:
        print("bad id", exc)
print("found", ok, "missing", errors)
