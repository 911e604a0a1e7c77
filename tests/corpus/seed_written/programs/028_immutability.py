# Question: can I annotate a memory in place before printing it?
m = thermal.get("mem-0042")
print("before:", m.title)

try:
    m.title = "EDITED"
except AttributeError as exc:
    print("cannot edit:", exc)

try:
    m.reviewed = True
    print("new attribute accepted:", m.reviewed)
except AttributeError as exc:
    print("cannot add attribute:", exc)

m.tags.append("annotated")
print("tags after append:", m.tags)
print("fresh copy tags:", thermal.get("mem-0042").tags)
print("after:", m.title)
