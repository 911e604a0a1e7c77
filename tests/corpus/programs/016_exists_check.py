def has_memory(query):
    return len(thermal.search(query, limit=1)) > 0


for q in ["A100", "L4 nodes", "quantum", "wal_sender_timeout", "Kafka"]:
    print(f"{q!r}: {'yes' if has_memory(q) else 'no'}")
