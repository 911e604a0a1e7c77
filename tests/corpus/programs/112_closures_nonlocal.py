def make_account(balance):
    history = []

    def deposit(amount):
        nonlocal balance
        balance += amount
        history.append(("dep", amount))
        return balance

    def withdraw(amount):
        nonlocal balance
        if amount > balance:
            raise ValueError(f"insufficient funds: {balance} < {amount}")
        balance -= amount
        history.append(("wd", amount))
        return balance

    return deposit, withdraw, history


dep, wd, hist = make_account(100)
dep(50)
wd(30)
try:
    wd(500)
except ValueError as e:
    print("error:", e)
print(dep(0), hist)
