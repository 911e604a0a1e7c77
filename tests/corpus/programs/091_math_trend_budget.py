import math
from collections import Counter

months = Counter(m.date[:7] for m in thermal.search("budget", limit=50))
xs = list(range(len(months)))
ys = [months[k] for k in sorted(months)]
if len(xs) > 1:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print("trend per month: {:+.2f}".format(slope), "log-volume", round(math.log1p(sum(ys)), 3))
else:
    print("not enough months")
