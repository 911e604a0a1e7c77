class Step:
    log = []

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        Step.log.append(f"start {self.name}")
        return self

    def __exit__(self, exc_type, exc, tb):
        outcome = "failed" if exc_type else "ok"
        Step.log.append(f"end {self.name}: {outcome}")
        return exc_type is KeyError


with Step("load"):
    data = {"a": 1}
with Step("lookup"):
    data["missing"]
print("\n".join(Step.log))
