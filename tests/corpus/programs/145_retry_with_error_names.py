# Retry jobs whose errors are transient, decided by the exception's class name.
class TransientError(Exception):
    pass


class QuotaError(TransientError):
    pass


class Job:
    def __init__(self, name, outcomes):
        self.name = name
        self.outcomes = list(outcomes)
        self.attempts = 0

    def run(self):
        self.attempts += 1
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if outcome == "ok":
            return f"{self.name} done"
        if outcome == "quota":
            raise QuotaError(f"{self.name}: quota exceeded")
        if outcome == "transient":
            raise TransientError(f"{self.name}: connection reset")
        if outcome == "bad":
            raise ValueError(f"{self.name}: bad input")
        raise KeyError(outcome)


RETRYABLE = ("TransientError", "QuotaError")


def run_with_retry(job, max_attempts=3):
    history = []
    while True:
        try:
            return job.run(), history
        except Exception as e:
            kind = type(e).__name__
            history.append(kind)
            if kind not in RETRYABLE or job.attempts >= max_attempts:
                return f"{job.name} failed: {e.__class__.__name__}: {e}", history


jobs = [
    Job("sync", ["transient", "ok"]),
    Job("export", ["quota", "quota", "quota"]),
    Job("import", ["bad"]),
    Job("index", []),
    Job("purge", ["missing"]),
]
for job in jobs:
    result, history = run_with_retry(job)
    print(f"{result} | attempts={job.attempts} errors={history}")
print("QuotaError is transient:", isinstance(QuotaError("x"), TransientError))
