# Question: list the vLLM deploys as a small table.
from typing import NamedTuple


class DeployRow(NamedTuple):
    day: str
    memory_id: str
    title: str
    rolled_back: bool
    confidence: float | None


hits = thermal.search("Rolled out vllm", limit=100)
rows = [
    DeployRow(
        day=(m.date or "")[:10],
        memory_id=m.id,
        title=m.title or "(untitled)",
        rolled_back="Rolled back" in m.content,
        confidence=m.confidence,
    )
    for m in hits
]
rows.sort(key=lambda r: (r.day, r.memory_id))

for r in rows:
    flag = "ROLLBACK" if r.rolled_back else "ok"
    print(f"{r.day}  {r.memory_id}  {flag:<8}  {r.title}")
print(f"{sum(r.rolled_back for r in rows)} of {len(rows)} vllm deploys were rolled back")
print(rows[0])
