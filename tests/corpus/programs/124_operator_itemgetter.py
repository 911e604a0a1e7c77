from operator import itemgetter, attrgetter, methodcaller

people = [("ann", 31, "nyc"), ("bo", 25, "sf"), ("cy", 31, "la")]
print(sorted(people, key=itemgetter(1, 0)))
print(list(map(itemgetter(2), people)))
print(list(map(methodcaller("title"), ["ann", "bo"])))


class P:
    def __init__(self, n):
        self.n = n


print([attrgetter("n")(P(i)) for i in range(3)])
