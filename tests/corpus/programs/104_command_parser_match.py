def run(command):
    match command.split():
        case ["add", x, y]:
            return int(x) + int(y)
        case ["neg", x]:
            return -int(x)
        case ["sum", *rest] if rest:
            return sum(map(int, rest))
        case ["help" | "?"]:
            return "commands: add, neg, sum"
        case []:
            return "empty"
        case _:
            return f"unknown: {command!r}"


for c in ["add 2 3", "neg 7", "sum 1 2 3 4", "?", "", "mul 2 2"]:
    print(run(c))
