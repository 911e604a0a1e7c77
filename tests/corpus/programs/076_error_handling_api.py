try:
    rows = thermal.search("kubernetes", limit=2)
    print("ok", [m.id for m in rows])
except Exception as exc:
    print("failed:", exc)
m = thermal.get("does-not-exist")
print("get returned None:", m is None)
