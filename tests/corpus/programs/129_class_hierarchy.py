class Shape:
    def __init__(self, name):
        self.name = name

    def area(self):
        raise NotImplementedError

    def __repr__(self):
        return f"{self.name}(area={self.area():.2f})"


class Rect(Shape):
    def __init__(self, w, h):
        super().__init__("Rect")
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h


class Circle(Shape):
    def __init__(self, r):
        super().__init__("Circle")
        self.r = r

    def area(self):
        return 3.141592653589793 * self.r**2


shapes = [Rect(2, 3), Circle(1), Rect(1, 1)]
print(sorted(shapes, key=lambda s: s.area()))
print(sum(s.area() for s in shapes) > 10)
