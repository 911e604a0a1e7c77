rows = thermal.search("Prune dangling images")
for m in rows:
    print(m.date, m.id, m.title)
if rows:
    words = rows[0].content.split()
    print("words in latest:", len(words))
    print("mentions 'five':", "five" in words)
