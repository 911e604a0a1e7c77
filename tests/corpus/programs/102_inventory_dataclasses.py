from dataclasses import dataclass, field, asdict
from typing import List


@dataclass
class Item:
    sku: str
    qty: int
    price: float
    tags: List[str] = field(default_factory=list)

    @property
    def value(self) -> float:
        return round(self.qty * self.price, 2)


stock = [Item("A-1", 3, 9.99, ["tool"]), Item("B-2", 0, 4.5), Item("C-3", 12, 1.25, ["bulk", "tool"])]
print(sum(i.value for i in stock))
print([i.sku for i in stock if i.qty == 0])
print(asdict(stock[2]))
