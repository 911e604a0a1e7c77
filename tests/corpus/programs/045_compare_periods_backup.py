before = thermal.count("backup restore", until="2025-11-30")
after = thermal.count("backup restore", since="2025-12-01")
change = after - before
print(f"backup restore: {before} before December, {after} since; change {change:+d}")
if before:
    print("ratio: {:.2f}".format(after / before))
