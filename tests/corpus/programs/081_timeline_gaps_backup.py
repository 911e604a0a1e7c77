from datetime import date


def parse(s):
    y, m, d = s[:10].split("-")
    return date(int(y), int(m), int(d))


days = sorted(set(parse(m.date) for m in thermal.search("backup restore", limit=50)))
gaps = [(b - a).days for a, b in zip(days, days[1:])]
if gaps:
    print("longest gap:", max(gaps), "days; average", round(sum(gaps) / len(gaps), 1))
else:
    print("fewer than two dates")
