from pprint import pprint

digest = {}
for m in thermal.search("", tags=["meeting"], limit=6):
    digest.setdefault(m.title.split(" (")[0], []).append(m.date)
pprint(digest)
