from functools import lru_cache, reduce
import operator


@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


print([fib(i) for i in range(15)])
print(fib(90))
print(reduce(operator.mul, range(1, 11)))
