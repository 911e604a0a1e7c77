from functools import lru_cache


@lru_cache(maxsize=None)
def topic_count(topic):
    return thermal.count(topic)


for t in ["GPU", "Postgres", "GPU", "Docker", "Postgres"]:
    print(t, topic_count(t))
info = topic_count.cache_info()
print("hits", info.hits, "misses", info.misses)
