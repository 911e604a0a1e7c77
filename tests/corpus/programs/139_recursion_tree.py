def depth(tree):
    if not isinstance(tree, dict) or not tree:
        return 0
    return 1 + max(depth(v) for v in tree.values())


def paths(tree, prefix=""):
    for k, v in sorted(tree.items()):
        p = f"{prefix}/{k}"
        if isinstance(v, dict) and v:
            yield from paths(v, p)
        else:
            yield p


fs = {"etc": {"hosts": None, "ssh": {"config": None}}, "tmp": {}, "usr": {"bin": {"python3": None}}}
print(depth(fs))
print(list(paths(fs)))
