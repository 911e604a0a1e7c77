email_ids = {m.id for m in thermal.filter(limit=100) if m.source == "email"}
gpu_ids = {m.id for m in thermal.search("", tags=["gpu"], limit=100)}
print("email:", len(email_ids), "gpu:", len(gpu_ids))
print("email & gpu:", sorted(email_ids & gpu_ids, key=lambda s: int(s[1:])))
