from typing import NamedTuple, Optional, Dict

Point = NamedTuple("Point", [("x", float), ("y", float)])


def centroid(points) -> Optional[Point]:
    if not points:
        return None
    n = len(points)
    return Point(sum(p.x for p in points) / n, sum(p.y for p in points) / n)


pts = [Point(0, 0), Point(4, 0), Point(4, 3)]
print(centroid(pts), centroid([]))
lookup: Dict[str, Point] = {"origin": pts[0]}
print(lookup["origin"].x)
