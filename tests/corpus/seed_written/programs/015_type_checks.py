# Question: sanity-check what the API hands back before building on it.
from dataclasses import fields, is_dataclass

results = thermal.search("backup", limit=3)
print("search returns a list:", isinstance(results, list), "len", len(results))
print("grep returns a list:", isinstance(thermal.grep("backup", limit=2), list))
print("filter returns a list:", isinstance(thermal.filter(limit=2), list))
print("count returns an int:", isinstance(thermal.count(), int))
print("summarize returns a str:", isinstance(thermal.summarize("backup", max_results=1), str))
print("missing get returns None:", thermal.get("mem-9999") is None)

m = results[0]
print("is dataclass:", is_dataclass(m))
print("fields:", [f.name for f in fields(m)])
print("tags is list:", isinstance(m.tags, list), "confidence is float:", isinstance(m.confidence, float))
