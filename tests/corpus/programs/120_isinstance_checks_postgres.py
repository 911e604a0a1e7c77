def flatten(value, out):
    if isinstance(value, (list, tuple)):
        for v in value:
            flatten(v, out)
    elif isinstance(value, dict):
        for k in sorted(value):
            flatten(value[k], out)
    else:
        out.append(value)
    return out


data = [m.to_dict() for m in thermal.search("Postgres migration", limit=3)]
flat = flatten(data, [])
print(len(flat), "leaves;", sum(1 for x in flat if isinstance(x, str)), "strings")
