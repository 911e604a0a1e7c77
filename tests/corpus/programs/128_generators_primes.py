def primes():
    found = []
    n = 2
    while True:
        if all(n % p for p in found if p * p <= n):
            found.append(n)
            yield n
        n += 1


gen = primes()
print([next(gen) for _ in range(15)])
print(sum(p for p, _ in zip(primes(), range(100))))
