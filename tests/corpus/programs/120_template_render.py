from string import Template

t = Template("Dear $name, your order #$order ships on $day.")
for row in [{"name": "Ann", "order": 17, "day": "Monday"}, {"name": "Bo", "order": 18}]:
    print(t.safe_substitute(row))
