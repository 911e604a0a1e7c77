topics = ["GPU", "Postgres", "cleanup", "vendor", "budget", "backup", "latency"]
counts = {t: thermal.count(t) for t in topics}
width = max(len(t) for t in topics)
for topic, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    print(f"{topic.ljust(width)} : {n}")
