for word in ["rollback", "prepay", "runbook"]:
    hits = thermal.grep(word)
    print(f"{word}: {len(hits)} hit(s)", [m.id for m in hits])
