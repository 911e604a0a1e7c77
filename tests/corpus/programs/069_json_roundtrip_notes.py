import json

notes = {m.id: {"t": m.title, "c": m.confidence} for m in thermal.search("drill")}
blob = json.dumps(notes, sort_keys=True)
back = json.loads(blob)
print(len(blob) > 50, sorted(back) == sorted(notes))
print(sorted(back.items())[:2])
