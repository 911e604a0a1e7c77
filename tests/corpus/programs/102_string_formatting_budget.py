res = thermal.search("budget", limit=2)
template = "{idx:>2}. {title:<45.45} {conf:>5.0%}"
for idx, m in enumerate(res, 1):
    print(template.format(idx=idx, title=m.title, conf=m.confidence))
print("{} results for '{}'".format(len(res), "budget"))
