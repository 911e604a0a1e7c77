from typing import Dict, List, Optional


def group_by_source(rows: List) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for m in rows:
        out.setdefault(m.source, []).append(m.id)
    return out


def first_title(rows: List) -> Optional[str]:
    return rows[0].title if rows else None


rows = thermal.search("Docker")
print(group_by_source(rows))
print(first_title(rows))
print(first_title(thermal.search("no-such-topic-xyz")))
