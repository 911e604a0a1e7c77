index = {m.id: m for m in thermal.filter(limit=100)}
print(len(index))
chain = ["m1", "m13", "m25", "m37", "m49"]
print([index[i].title if i in index else None for i in chain])
