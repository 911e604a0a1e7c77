index = {m.id: m for m in thermal.search("backup restore", limit=30)}
by_conf = {k: v.confidence for k, v in index.items() if v.confidence >= 0.7}
print(len(index), "indexed;", len(by_conf), "confident")
print(sorted(by_conf.items(), key=lambda kv: -kv[1])[:3])
