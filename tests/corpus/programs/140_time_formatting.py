import time

t = time.gmtime(1767225600)
print(time.strftime("%Y-%m-%d %H:%M:%S", t), t.tm_wday, t.tm_yday)
start = time.perf_counter()
total = sum(range(10000))
print(total, time.perf_counter() - start >= 0)
