"""The host helper a network policy needs: ready within its bound, its failures named, always stopped."""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

import pytest
from terminai_sandbox.errors import EgressError
from terminai_sandbox.launch.helper_process import HelperProcess


def _py(code: str) -> list[str]:
    return [sys.executable, "-I", "-c", code]


def test_a_helper_that_listens_is_ready_and_sigterm_stops_it(tmp_path: Path) -> None:
    helper = HelperProcess.start(
        "test proxy",
        _py("import signal,sys,time\nprint('listening unix:/x', flush=True)\ntime.sleep(60)"),
        log=tmp_path / "log",
        env={"PATH": os.environ["PATH"], "SECRET_TOKEN": "t"},
    )
    assert helper.address == "unix:/x"
    assert helper.stop() == -15
    assert helper.stop() == -15  # idempotent


def test_the_helper_gets_a_scrubbed_environment_and_no_core_dumps(tmp_path: Path) -> None:
    out = tmp_path / "seen"
    launcher_limits = resource.getrlimit(resource.RLIMIT_CORE)
    helper = HelperProcess.start(
        "test proxy",
        _py(
            "import os,resource,sys,time\n"
            f"open({str(out)!r},'w').write(repr((sorted(os.environ), resource.getrlimit(resource.RLIMIT_CORE),"
            " os.getsid(0) == os.getpid(), oct(os.umask(0)))))\n"
            "print('listening x', flush=True)\ntime.sleep(60)"
        ),
        log=tmp_path / "log",
        env={"PATH": os.environ["PATH"], "AWS_SECRET_ACCESS_KEY": "k", "HOME": "/root", "LANG": "C.UTF-8"},
    )
    hard_limits = resource.prlimit(helper.process.pid, resource.RLIMIT_CORE)
    helper.stop()
    names, core, leader, umask = eval(out.read_text())
    assert names in (["LANG", "PATH"], ["LANG", "LC_CTYPE", "PATH"])
    assert core[0] == 0  # from its first instruction: no dump can hold the traffic
    assert hard_limits == (0, 0)  # and it cannot raise its own limit
    assert resource.getrlimit(resource.RLIMIT_CORE) == launcher_limits  # the launcher's own is restored
    assert leader  # a session of its own: the terminal's Ctrl-C goes to the launcher, which stops it
    assert umask == "0o77"


def test_a_helper_that_exits_first_fails_with_what_it_said(tmp_path: Path) -> None:
    with pytest.raises(EgressError) as caught:
        HelperProcess.start(
            "egress proxy",
            _py("import sys\nsys.stderr.write('error: the policy file is not JSON\\n')\nsys.exit(3)"),
            log=tmp_path / "log",
            env={},
        )
    assert caught.value.exit_code == 18
    assert "exited (code 3) before it listened" in caught.value.message
    assert "the policy file is not JSON" in caught.value.message


def test_a_helper_that_never_listens_is_stopped_at_the_bound(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    with pytest.raises(EgressError, match=r"did not start listening within 0\.5 s"):
        HelperProcess.start(
            "egress proxy",
            _py(f"import os,time\nopen({str(pidfile)!r},'w').write(str(os.getpid()))\ntime.sleep(60)"),
            log=tmp_path / "log",
            env={},
            ready_seconds=0.5,
        )
    assert time.monotonic() - started < 10
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_a_helper_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    helper = HelperProcess.start(
        "egress proxy",
        _py(
            "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('listening x', flush=True)\n"
            "time.sleep(60)"
        ),
        log=tmp_path / "log",
        env={},
    )
    import terminai_sandbox.launch.helper_process as module

    module.STOP_SECONDS, saved = 0.5, module.STOP_SECONDS
    try:
        assert helper.stop() == -9
    finally:
        module.STOP_SECONDS = saved


def test_a_helper_that_says_something_else_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EgressError, match="instead of 'listening ADDRESS'"):
        HelperProcess.start(
            "egress proxy", _py("print('hello', flush=True);import time;time.sleep(60)"), log=tmp_path / "l", env={}
        )
