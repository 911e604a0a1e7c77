summary = thermal.summarize("Postgres migration", max_results=3)
print(summary)
print("total matches:", thermal.count("Postgres migration"))
