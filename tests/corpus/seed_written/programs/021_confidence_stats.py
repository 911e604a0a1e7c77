# Question: how confident are the council's records, compared with the incident bot's?
import statistics

for source in ["council", "incident-bot", "Incident-Bot", "cron"]:
    rows = thermal.filter(source=source, limit=100)
    values = [r.confidence for r in rows if r.confidence is not None]
    missing = len(rows) - len(values)
    if not values:
        print(f"{source}: no confidence values")
        continue
    print(
        f"{source:<13} n={len(values):>3} missing={missing} "
        f"mean={statistics.mean(values):.3f} median={statistics.median(values):.2f} "
        f"min={min(values)} max={max(values)}"
    )
    if len(values) > 1:
        print(f"{'':<13} stdev={statistics.stdev(values):.3f} mode={statistics.mode(values)}")
