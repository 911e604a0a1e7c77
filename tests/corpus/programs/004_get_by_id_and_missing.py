m = thermal.get("m12")
if m is None:
    print("m12 not found")
else:
    print(m.id, "|", m.title, "|", m.source, "|", m.confidence)
missing = thermal.get("m9999")
print("m9999:", "missing" if missing is None else missing.title)
