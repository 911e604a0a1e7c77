from collections import OrderedDict

trend = OrderedDict()
for m in sorted(thermal.search("", tags=["gpu"]), key=lambda m: m.date):
    trend.setdefault(m.date[:7], []).append(m.title)
for month, titles in trend.items():
    print(month, len(titles), "|", "; ".join(titles))
