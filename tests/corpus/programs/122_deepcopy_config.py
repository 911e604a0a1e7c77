import copy

defaults = {"retries": 3, "hosts": ["a", "b"], "tls": {"verify": True}}
prod = copy.deepcopy(defaults)
prod["hosts"].append("c")
prod["tls"]["verify"] = False
shallow = copy.copy(defaults)
shallow["hosts"].append("z")
print(defaults)
print(prod)
