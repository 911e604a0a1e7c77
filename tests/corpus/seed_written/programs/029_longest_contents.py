# Question: which memories are the longest, and how long is a typical one?
import statistics

everything = []
for page_no in range(10):
    page = thermal.search("", limit=100, offset=page_no * 100)
    if not page:
        break
    everything.extend(page)

lengths = sorted(((len(m.content or ""), m.id) for m in everything), reverse=True)
print("median content length:", statistics.median(n for n, _ in lengths))
print("empty or NULL contents:", sum(1 for n, _ in lengths if n == 0))
for n, memory_id in lengths[:5]:
    m = thermal.get(memory_id)
    preview = m.content[:60].replace("\n", " / ")
    print(f"{n:>6}  {memory_id}  {m.title}")
    print(f"        {preview}...")
