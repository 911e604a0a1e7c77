summary = thermal.summarize("backup restore", max_results=3)
print(summary)
print("total matches:", thermal.count("backup restore"))
