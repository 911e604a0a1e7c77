facets = thermal.facets(by="tag")
for f in sorted(facets, key=lambda f: -f.count)[:3]:
    print(f"{f.key:<12} {f.count}")
months = thermal.facets("backup restore", by="month")
print("months:", [(f.key, f.count) for f in months])
