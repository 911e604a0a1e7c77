import hashlib

rows = thermal.search("Log retention", limit=3)
for m in rows:
    digest = hashlib.sha256(m.content.encode("utf-8")).hexdigest()[:12]
    print(m.id, digest)
