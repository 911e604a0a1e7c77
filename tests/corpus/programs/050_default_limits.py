print("search default:", len(thermal.search("team")))
print("filter default:", len(thermal.filter()))
print("grep default:", len(thermal.grep("team")))
print("filter limit=5:", len(thermal.filter(limit=5)))
