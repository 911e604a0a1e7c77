import statistics

rows = thermal.search("cleanup", limit=50)
conf = [m.confidence for m in rows]
print("n =", len(conf))
print("mean  =", round(statistics.mean(conf), 3))
print("median=", statistics.median(conf))
print("stdev =", round(statistics.stdev(conf), 3))
print("low confidence:", [m.id for m in rows if m.confidence < 0.7])
