# Question: do the non-English and emoji notes come back intact?
for query in ["café", "Straße", "Müller", "🔥", "ᏣᎳᎩ", "Zoë", "Sécurité", "€", "°C"]:
    hits = thermal.search(query, limit=100)
    titles = sorted(m.title or "(no title)" for m in hits)
    print(f"{query}: {len(hits)} -> {titles[:3]}")

m = thermal.search("ᏣᎳᎩ", limit=1)[0]
print(len(m.content), m.content.encode("utf-8")[:24])
print("CAFÉ vs café:", thermal.count("CAFÉ"), thermal.count("café"), thermal.count("CAFé"))
