from collections import deque

window = deque(maxlen=3)
for m in sorted(thermal.search("On-call"), key=lambda m: m.date):
    window.append(m.date)
    print(list(window))
