import textwrap

for m in thermal.search("vendor", limit=2):
    print("+" + "-" * 42 + "+")
    print("| " + m.title.ljust(40) + " |")
    for line in textwrap.wrap(m.content, width=40):
        print("| " + line.ljust(40) + " |")
    print("+" + "-" * 42 + "+")
