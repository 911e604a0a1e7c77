import json

results = thermal.search("budget", limit=2)
payload = [m.to_dict() for m in results]
text = json.dumps(payload, indent=2, sort_keys=True)
print(len(payload), "records,", len(text), "bytes of JSON")
back = json.loads(text)
print(sorted(back[0].keys())[:5] if back else "empty")
