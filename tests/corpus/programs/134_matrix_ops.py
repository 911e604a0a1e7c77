def transpose(m):
    return [list(row) for row in zip(*m)]


def matmul(a, b):
    return [[sum(x * y for x, y in zip(row, col)) for col in transpose(b)] for row in a]


a = [[1, 2], [3, 4]]
b = [[5, 6], [7, 8]]
print(transpose(a))
print(matmul(a, b))
print([[1 if i == j else 0 for j in range(3)] for i in range(3)])
