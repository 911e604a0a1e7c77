import math

conf = [m.confidence for m in thermal.filter(limit=100)]
mean = sum(conf) / len(conf)
var = sum((c - mean) ** 2 for c in conf) / len(conf)
print(f"mean={mean:.4f} sd={math.sqrt(var):.4f} min={min(conf)} max={max(conf)}")
print("log-odds of mean:", round(math.log(mean / (1 - mean)), 4))
