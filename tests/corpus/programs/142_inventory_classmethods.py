# Inventory lines parsed through a classmethod constructor, updated from a patch dict.
class Item:
    currency = "EUR"

    def __init__(self, sku, qty, price):
        self.sku = sku
        self.qty = qty
        self.price = price

    @staticmethod
    def normalize(sku):
        return sku.strip().upper().replace(" ", "-")

    @classmethod
    def from_line(cls, line):
        sku, qty, price = line.split(",")
        return cls(cls.normalize(sku), int(qty), float(price))

    @property
    def total(self):
        return round(self.qty * self.price, 2)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.sku!r}, qty={self.qty})"


class Perishable(Item):
    discount = 0.9

    @property
    def total(self):
        return round(self.qty * self.price * self.discount, 2)


lines = ["widget a, 4, 2.50", "gadget, 10, 1.25", " bolt x ,100,0.05"]
items = [Item.from_line(line) for line in lines]
items.append(Perishable.from_line("milk, 3, 1.20"))

updates = {"GADGET": {"qty": 12}, "BOLT-X": {"price": 0.04, "colour": "grey"}}
for it in items:
    for field_name, value in updates.get(it.sku, {}).items():
        if hasattr(it, field_name):
            setattr(it, field_name, value)
        else:
            print(f"skipping unknown field {field_name!r} for {it.sku}")

for it in items:
    print(f"{it!r:28} {type(it).__name__:11} {it.total:8.2f} {Item.currency}")
print("grand total:", round(sum(it.total for it in items), 2))
print("kinds:", sorted({it.__class__.__name__ for it in items}))
print("perishable items:", [it.sku for it in items if isinstance(it, Perishable)])
