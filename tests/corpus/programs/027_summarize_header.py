text = thermal.summarize("vendor", max_results=3)
first_line = text.splitlines()[0] if text else ""
print("summary starts with 'Found':", first_line.startswith("Found"))
print("mentions the query:", "'vendor'" in first_line)
