rows = thermal.search("cleanup", limit=50)
titles = sorted({m.title.split("(")[0].strip().lower().replace(" ", "_") for m in rows})
print(titles)
print(max(titles, key=len).upper())
