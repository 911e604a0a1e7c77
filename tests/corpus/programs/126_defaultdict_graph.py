from collections import defaultdict, deque

edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e"), ("f", "g")]
graph = defaultdict(list)
for x, y in edges:
    graph[x].append(y)
    graph[y].append(x)


def bfs(start):
    seen, order, q = {start}, [], deque([start])
    while q:
        node = q.popleft()
        order.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in seen:
                seen.add(nxt)
                q.append(nxt)
    return order


print(bfs("a"))
print(bfs("f"))
