class Section:
    depth = 0

    def __init__(self, title):
        self.title = title

    def __enter__(self):
        print("  " * Section.depth + f"[{self.title}]")
        Section.depth += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        Section.depth -= 1
        return False


with Section("Memory review"):
    for kind in ["incident", "cleanup"]:
        with Section(kind):
            for m in thermal.search("", tags=[kind], limit=2):
                print("  " * Section.depth + m.title)
