import string

password = "Tr0ub4dor&3"
checks = {
    "lower": any(c in string.ascii_lowercase for c in password),
    "upper": any(c in string.ascii_uppercase for c in password),
    "digit": any(c in string.digits for c in password),
    "symbol": any(c in string.punctuation for c in password),
}
print(checks, all(checks.values()))
print(string.capwords("the quick brown fox"))
