import math


class Shape:
    registry = {}

    @classmethod
    def register(cls, sub):
        cls.registry[sub.__name__.lower()] = sub
        return sub

    @classmethod
    def create(cls, kind, *args):
        return cls.registry[kind](*args)

    @property
    def name(self):
        return type(self).__name__.lower()

    def describe(self):
        return f"{self.name} with area {self.area:.2f}"


@Shape.register
class Circle(Shape):
    def __init__(self, r):
        self.r = r

    @property
    def area(self):
        return math.pi * self.r**2


@Shape.register
class Rect(Shape):
    def __init__(self, w, h):
        self.w = w
        self.h = h

    @property
    def area(self):
        return self.w * self.h

    @staticmethod
    def square(side):
        return Rect(side, side)


shapes = [Shape.create("circle", 1.5), Shape.create("rect", 2, 3), Rect.square(2.5)]
for s in sorted(shapes, key=lambda s: s.area):
    print(s.describe())
print("registered:", sorted(Shape.registry))
print("same class:", shapes[1].__class__ is shapes[2].__class__, type(shapes[0]) is Circle)
print("factory names:", Shape.create.__name__, Rect.square.__name__)
