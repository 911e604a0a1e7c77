from itertools import islice

items = iter(thermal.search("cleanup", limit=30))
batch_no = 0
while True:
    batch = list(islice(items, 4))
    if not batch:
        break
    batch_no += 1
    print("batch", batch_no, [m.id for m in batch])
