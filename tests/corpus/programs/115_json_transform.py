import json

doc = json.loads(
    '{"users": [{"name": "a", "roles": ["admin", "dev"]}, {"name": "b", "roles": []}, {"name": "c", "roles": ["dev"]}]}'
)
by_role = {}
for u in doc["users"]:
    for r in u["roles"] or ["none"]:
        by_role.setdefault(r, []).append(u["name"])
print(json.dumps(by_role, sort_keys=True))
print(json.dumps({"count": len(doc["users"])}, indent=2))
