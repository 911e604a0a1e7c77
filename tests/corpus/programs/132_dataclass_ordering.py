from dataclasses import dataclass, field, replace


@dataclass(order=True)
class Task:
    priority: int
    name: str = field(compare=False)
    done: bool = field(default=False, compare=False)


tasks = [Task(3, "docs"), Task(1, "fix prod"), Task(2, "review")]
tasks.sort()
print([t.name for t in tasks])
tasks[0] = replace(tasks[0], done=True)
print(tasks[0])
