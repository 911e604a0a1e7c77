from itertools import combinations, permutations, product, groupby, chain, islice, count

print(list(combinations("ABC", 2)))
print(len(list(permutations(range(4), 2))))
print(["".join(p) for p in product("ab", repeat=2)])
print([(k, len(list(g))) for k, g in groupby("aaabccdd")])
print(list(islice(chain([1, 2], count(10, 5)), 6)))
