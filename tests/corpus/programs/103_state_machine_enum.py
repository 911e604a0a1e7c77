from enum import Enum, auto


class State(Enum):
    IDLE = auto()
    RUNNING = auto()
    DONE = auto()
    FAILED = auto()


TRANSITIONS = {
    (State.IDLE, "start"): State.RUNNING,
    (State.RUNNING, "finish"): State.DONE,
    (State.RUNNING, "crash"): State.FAILED,
    (State.FAILED, "retry"): State.RUNNING,
}
state = State.IDLE
for event in ["start", "crash", "retry", "finish", "start"]:
    nxt = TRANSITIONS.get((state, event))
    if nxt is None:
        print(f"{event!r} ignored in {state.name}")
        continue
    print(f"{state.name} --{event}--> {nxt.name}")
    state = nxt
print("final:", state, state.value)
