def classify(m):
    text = m.content.lower()
    if "rolled back" in text:
        return "rollback"
    elif "delete" in text or "prune" in text:
        return "removal"
    elif "upgrade" in text:
        return "upgrade"
    elif "renew" in text:
        return "contract"
    elif "latency" in text:
        return "performance"
    elif "allocate" in text or "gpu" in text:
        return "capacity"
    else:
        return "other"


from collections import Counter

print(sorted(Counter(classify(m) for m in thermal.search("vendor contract", limit=50)).items()))
