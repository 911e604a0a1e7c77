from datetime import date
import itertools

rows = sorted(thermal.filter(date_after="2025-11-01", date_before="2026-02-01", limit=100), key=lambda m: m.date)


def week(m):
    y, mth, d = (int(x) for x in m.date[:10].split("-"))
    return date(y, mth, d).isocalendar()[1]


for wk, group in itertools.groupby(rows, key=week):
    items = list(group)
    print(f"week {wk:02d}: {len(items)} memories; first: {items[0].title[:40]}")
