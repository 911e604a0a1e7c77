# Question: look up a few memory ids people mentioned in chat.
wanted = ["mem-0042", "mem-0017", "MEM-0042", "mem-42", "mem-0342", ""]

for memory_id in wanted:
    m = thermal.get(memory_id)
    if m is None:
        print(f"{memory_id!r}: not found")
    else:
        print(f"{memory_id!r}: {m.date} | {m.title} | source={m.source}")
