a = ["x", "y", "z", "x", "w"]
b = {"y", "w", "q"}
print(list(dict.fromkeys(a)))
print(sorted(set(a) & b), sorted(set(a) | b), sorted(set(a) - b), sorted(set(a) ^ b))
print(frozenset("aab") == frozenset("ba"))
