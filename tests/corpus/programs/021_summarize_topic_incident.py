summary = thermal.summarize("incident latency", max_results=5)
print(summary)
print("total matches:", thermal.count("incident latency"))
