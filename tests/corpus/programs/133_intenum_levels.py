from enum import IntEnum


class Level(IntEnum):
    DEBUG = 10
    INFO = 20
    WARNING = 30
    ERROR = 40


events = [("disk full", Level.ERROR), ("start", Level.INFO), ("slow", Level.WARNING)]
for msg, lvl in sorted(events, key=lambda e: e[1], reverse=True):
    if lvl >= Level.WARNING:
        print(f"{lvl.name:<8}{int(lvl):>3} {msg}")
print(Level(20).name, Level.ERROR > 35)
