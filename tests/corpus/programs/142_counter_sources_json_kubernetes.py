import json
from collections import Counter

c = Counter(m.source for m in thermal.search("Kubernetes upgrade", limit=50))
print(json.dumps(dict(c.most_common()), sort_keys=True))
