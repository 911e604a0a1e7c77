import json

DEFAULTS = {"retries": 3, "timeout": 30.0, "verbose": False, "region": "eu-west"}
DEPRECATED = ("legacy_mode",)


class Config:
    def __init__(self, **overrides):
        for key, value in DEFAULTS.items():
            setattr(self, key, value)
        self.legacy_mode = True
        for key, value in overrides.items():
            if not hasattr(self, key):
                raise AttributeError(f"unknown option {key!r}")
            expected = type(DEFAULTS[key])
            if not isinstance(value, expected):
                raise TypeError(f"{key} must be {expected.__name__}, not {type(value).__name__}")
            setattr(self, key, value)
        for key in DEPRECATED:
            if hasattr(self, key):
                delattr(self, key)

    def as_dict(self):
        return {key: getattr(self, key) for key in DEFAULTS}

    def __repr__(self):
        return f"{self.__class__.__name__}({json.dumps(self.as_dict(), sort_keys=True)})"


print(Config())
print(Config(retries=5, verbose=True))
for bad in ({"retries": "five"}, {"colour": "blue"}, {"timeout": 10}):
    try:
        Config(**bad)
    except (TypeError, AttributeError) as e:
        print(f"{type(e).__name__}: {e}")
print("legacy option kept:", hasattr(Config(), "legacy_mode"))
