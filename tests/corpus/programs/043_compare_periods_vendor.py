before = thermal.count("vendor contract", until="2025-11-30")
after = thermal.count("vendor contract", since="2025-12-01")
change = after - before
print(f"vendor contract: {before} before December, {after} since; change {change:+d}")
if before:
    print("ratio: {:.2f}".format(after / before))
