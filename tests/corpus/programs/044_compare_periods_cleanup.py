before = thermal.count("cleanup", until="2025-11-30")
after = thermal.count("cleanup", since="2025-12-01")
change = after - before
print(f"cleanup: {before} before December, {after} since; change {change:+d}")
if before:
    print("ratio: {:.2f}".format(after / before))
