res = thermal.search("latency")
if not res:
    print("no latency memories")
else:
    latest = res[0]
    print("Latest latency memory:", latest.id, latest.date)
    print("Title:", latest.title)
    print("Content:", latest.content)
    print("Tags:", latest.tags)
