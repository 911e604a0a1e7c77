import statistics

hits = thermal.filter(tags="cleanup", limit=100)
scores = [m.confidence for m in hits]
if scores:
    print("n =", len(scores))
    print("mean = {:.2f}, median = {:.2f}".format(statistics.mean(scores), statistics.median(scores)))
    print("stdev = %.3f" % (statistics.pstdev(scores)))
else:
    print("no memories tagged cleanup")
