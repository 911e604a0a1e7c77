class NotFound(Exception):
    pass


def must_get(mid):
    m = thermal.get(mid)
    if m is None:
        raise NotFound(f"memory {mid} not found")
    return m


for mid in ["m7", "m70"]:
    try:
        print(must_get(mid).title)
    except NotFound as e:
        print("error:", e)
