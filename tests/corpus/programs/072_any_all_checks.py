rows = thermal.search("Backup restore drill")
print("any slack:", any(m.source == "slack" for m in rows))
print("all meetings:", all("meeting" in m.tags for m in rows))
print("all 2025+:", all(m.date >= "2025-01-01" for m in rows))
