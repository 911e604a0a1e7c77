from pprint import pformat, pprint

tree = {"root": {"left": {"value": 1, "children": []}, "right": {"value": 2, "children": [3, 4, 5]}}, "size": 5}
pprint(tree, width=40)
print(pformat([list(range(12))], compact=True, width=30))
