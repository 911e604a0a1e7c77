facets = thermal.facets(by="tag")
for f in sorted(facets, key=lambda f: -f.count)[:4]:
    print(f"{f.key:<12} {f.count}")
months = thermal.facets("vendor contract", by="month")
print("months:", [(f.key, f.count) for f in months])
