# Question: which recent incident notes are missing a summary?
hits = thermal.search("Severity", limit=100)

missing, blank, ok = [], [], 0
for m in hits:
    try:
        text = m.summary.strip()
    except AttributeError:
        missing.append(m)
        continue
    if text:
        ok += 1
    else:
        blank.append(m)

print(f"{len(hits)} incident notes: {ok} with summary, {len(missing)} NULL, {len(blank)} empty")
for m in sorted(missing, key=lambda m: m.id)[:10]:
    first_sentence = m.content.split(".")[0]
    print(f"  {m.id}: {first_sentence}")
