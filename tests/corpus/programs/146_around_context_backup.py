res = thermal.search("backup restore", limit=1)
if res:
    centre = res[0]
    near = thermal.around(centre.id, 1, 1)
    print("around", centre.id, [m.id for m in near])
else:
    print("no match")
