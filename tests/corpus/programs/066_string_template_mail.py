from string import Template

tpl = Template("Hi $team,\n$n open item(s) need you; oldest: $oldest.")
by_team = {}
for m in thermal.filter(limit=100):
    if "status open" in m.content:
        team = m.tags[1]
        by_team.setdefault(team, []).append(m)
for team in sorted(by_team):
    items = sorted(by_team[team], key=lambda m: m.date)
    print(tpl.substitute(team=team, n=len(items), oldest=items[0].title))
    print("---")
