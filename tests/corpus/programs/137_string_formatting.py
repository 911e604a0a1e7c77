values = [3.14159, 2.5e-05, 1234567.891, -0.5]
for v in values:
    print(f"{v:10.3f} | {v:>12.3e} | {v:,.1f} | {v:+.0%}")
print("{:^20}".format("centered"), "|{:<6}|{:>6}|".format("ab", "cd"))
