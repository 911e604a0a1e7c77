ids = ["m3", "m15", "m27", "m41", "m999"]
found, missing = [], []
for mid in ids:
    m = thermal.get(mid)
    (missing if m is None else found).append(m or mid)
print("found:")
for m in found:
    print(f"  {m.id:>4} {m.date} {m.title}")
print("missing:", missing)
