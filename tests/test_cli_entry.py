"""The console script's entry (perfmodel.cli.entry): the collector held off during start-up and back on for the
command, and the fast exit - the same exit status, output and atexit handlers as Python's own exit."""
from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading

import pytest

import perfmodel.cli.entry as entry

ENTRY = [sys.executable, "-m", "perfmodel.cli.entry"]


def _run(*args):
    return subprocess.run([*ENTRY, *args], capture_output=True, text=True, timeout=300)


def test_a_command_prints_all_its_output_and_exits_0():
    done = _run("devices", "list", "--json")
    assert done.returncode == 0, done.stderr
    ids = {d["id"] for d in json.loads(done.stdout)["devices"]}     # the whole document arrived
    assert {"g80", "h100", "h200"} <= ids


def test_bad_input_still_exits_2_with_its_paragraph():
    done = _run("analyze", "vec_add", "--device", "no_such_gpu")
    assert done.returncode == 2
    assert "no_such_gpu" in done.stderr and "Traceback" not in done.stderr


def test_a_closed_pipe_ends_as_with_pythons_own_exit():
    # `perfmodel devices list | true`: the reader has gone before the command writes (it starts in ~0.3 s); the
    # entry ends as perfmodel.cli.main run by Python does: the same status, no traceback
    ends = []
    for module in ("perfmodel.cli.entry", "perfmodel.cli.main"):
        p = subprocess.Popen([sys.executable, "-m", module, "devices", "list"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        p.stdout.close()
        _, err = p.communicate(timeout=300)
        assert b"Traceback" not in err
        ends.append(p.returncode)
    assert ends[0] == ends[1]


@pytest.mark.parametrize("code, status", [(None, 0), (0, 0), (2, 2), (256 + 3, 3), (-1, 255), ("bye", 1)])
def test_exit_status_as_sys_exit_gives_it(monkeypatch, capsys, code, status):
    seen = []
    ran = []
    monkeypatch.setattr(threading, "active_count", lambda: 1)   # pytest-xdist's worker has threads of its own
    monkeypatch.setattr("os._exit", seen.append)
    monkeypatch.setattr("atexit._run_exitfuncs", lambda: ran.append(True))
    entry._exit(code)
    assert seen == [status] and ran == [True]
    if isinstance(code, str):
        assert capsys.readouterr().err.strip() == "bye"


def test_another_live_thread_gets_pythons_own_exit(monkeypatch):
    monkeypatch.setattr("os._exit", lambda status: pytest.fail("fast exit with a thread alive"))
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with pytest.raises(SystemExit) as exc:
            entry._exit(2)
        assert exc.value.code == 2
    finally:
        stop.set()
        t.join()


def test_the_collector_is_off_during_start_up_and_on_for_the_command(monkeypatch):
    import perfmodel.cli.main as cli_main

    state = {}

    def command():
        state["enabled"] = gc.isenabled()
        state["threshold"] = gc.get_threshold()[0]

    before = gc.get_threshold()
    monkeypatch.setattr(cli_main, "main", command)
    monkeypatch.setattr(entry, "_exit", lambda code: state.setdefault("code", code))
    try:
        entry.main()
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
    assert state == {"enabled": True, "threshold": entry._GEN0_THRESHOLD, "code": 0}
