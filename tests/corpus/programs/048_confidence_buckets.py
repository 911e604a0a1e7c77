buckets = {"low (<0.7)": [], "mid (0.7-0.85)": [], "high (>0.85)": []}
for m in thermal.filter(limit=100):
    if m.confidence < 0.7:
        buckets["low (<0.7)"].append(m.id)
    elif m.confidence <= 0.85:
        buckets["mid (0.7-0.85)"].append(m.id)
    else:
        buckets["high (>0.85)"].append(m.id)
for name, ids in buckets.items():
    print(f"{name}: {len(ids)}")
