history = thermal.search("Security review")
print(f"{len(history)} security reviews")
for m in reversed(history):
    print(f"{m.date} [{m.source}] conf={m.confidence}")
print("latest summary:", history[0].summary if history else "-")
