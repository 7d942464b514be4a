"""The evaluation floor: the least this machine must do to run a set of candidates.

The original harness's work, with nothing spent that the tests themselves do not need:
one interpreter imports every module the papers' tests import (named by the caller, as
learned with ``learn``), then, per candidate, copies the paper folder, writes the spliced
file and forks a child that runs ``paper2code_test.py`` as ``__main__`` in that folder;
``jobs`` children at a time, a slot taking the next candidate as soon as it is free. No
sandbox, no limits, no bookkeeping; the original pass rule (exit 0 and no error marker
in the output). The caller sets one BLAS/OpenMP thread in the environment.

Usage (input: one JSON object on stdin; output: one JSON object on stdout)::

    python floor-harness.py run    {"preload": [...], "jobs": N, "timeoutSec": S,
                                    "candidates": [{"dir", "file", "source"}]}
                                -> {"passes": [bool...], "durationsMs": [fork to exit, ...],
                                    "startupMs": interpreter start to the first fork}
    python floor-harness.py learn  {"candidates": [...]}  (one per paper, run in turn)
                                -> {"modules": [names imported from outside the folders]}
"""

import time

_STARTED = time.monotonic()

import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os
import runpy  # the children's, loaded once here
import select
import shutil
import signal
import sys
import tempfile

MARKERS = ("Error:", "Exception:", "Traceback", "failed")
TEST_ENTRY = "paper2code_test.py"


def _workspace(candidate, root):
    ws = tempfile.mkdtemp(dir=root)
    shutil.copytree(candidate["dir"], ws, dirs_exist_ok=True)
    with open(os.path.join(ws, candidate["file"]), "w") as f:
        f.write(candidate["source"])
    return ws


def _run_in_child(ws, out_fd, modules_file=None):
    """In the forked child: run the test entry as python would; never returns."""
    # A session of its own, as rcb's test processes have: with the kernel's autogroup
    # scheduling, CPU is shared between sessions first, so on a machine shared with other
    # users a test of another session would otherwise get a larger share than this one.
    os.setsid()
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.chdir(ws)
    sys.path.insert(0, ws)
    sys.argv[:] = [TEST_ENTRY]
    status = 0
    try:
        runpy.run_path(TEST_ENTRY, run_name="__main__")
    except SystemExit as error:
        code = error.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    if modules_file is not None:
        outside = []
        for name, module in list(sys.modules.items()):
            origin = getattr(module, "__file__", None) or ""
            if not os.path.realpath(origin).startswith(os.path.realpath(ws) + os.sep):
                outside.append(name)
        with open(modules_file, "w") as f:
            json.dump(outside, f)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status & 0xFF)


def _fork(candidate, ws, modules_file=None):
    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _run_in_child(ws, write_end, modules_file)
    os.close(write_end)
    return {"pid": pid, "fd": read_end, "pidfd": os.pidfd_open(pid), "out": bytearray(),
            "started": started, "status": None}


def _start(candidate, root, modules_file=None):
    return _fork(candidate, _workspace(candidate, root), modules_file)


def _passed(child):
    status = child["status"]
    text = child["out"].decode("utf-8", "replace")
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and not any(m in text for m in MARKERS)


def run(job):
    # Python's recipe for a fork server, as rcb's warm server follows it: no collections
    # during the imports, gc.freeze() before the forks, the collector on again after.
    gc.disable()
    for name in job.get("preload", []):
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a module that fails to import is not preloaded
            pass
    # The preloaded objects are never garbage: keep every child's collections off them
    # (and their pages shared), as any fork server would.
    gc.freeze()
    gc.enable()
    startup_ms = (time.monotonic() - _STARTED) * 1000
    candidates = job["candidates"]
    jobs = int(job.get("jobs", 1))
    timeout = float(job.get("timeoutSec", 60))
    passes = [False] * len(candidates)
    durations = [0.0] * len(candidates)
    root = tempfile.mkdtemp(prefix="rcb-floor-")
    # Workspaces are made ahead, while children run, so that a free slot forks at once;
    # they are removed at the end.
    made = []
    running = {}  # index -> child
    following = 0
    try:
        while following < len(candidates) or running:
            while following < len(candidates) and len(running) < jobs:
                ws = made.pop(0) if made else _workspace(candidates[following], root)
                running[following] = _fork(candidates[following], ws)
                following += 1
            ahead = following + len(made)
            if ahead < len(candidates) and len(made) < jobs:
                made.append(_workspace(candidates[ahead], root))
                wait = 0
            else:
                wait = 0.5
            fds = {}
            for index, child in running.items():
                if child["fd"] is not None:
                    fds[child["fd"]] = (index, "out")
                if child["status"] is None:
                    fds[child["pidfd"]] = (index, "exit")
            ready, _, _ = select.select(list(fds), [], [], wait)
            for fd in ready:
                index, what = fds[fd]
                child = running[index]
                if what == "exit":
                    _, child["status"] = os.waitpid(child["pid"], 0)
                    durations[index] = (time.monotonic() - child["started"]) * 1000
                    os.close(child["pidfd"])
                    continue
                data = os.read(fd, 65536)
                if data:
                    child["out"] += data
                else:
                    os.close(fd)
                    child["fd"] = None
            for index in [i for i, c in running.items() if c["status"] is not None and c["fd"] is None]:
                passes[index] = _passed(running.pop(index))
            now = time.monotonic()
            for child in running.values():
                if child["status"] is None and now - child["started"] > timeout:
                    os.kill(child["pid"], signal.SIGKILL)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"passes": passes, "durationsMs": durations, "startupMs": startup_ms}


def learn(job):
    modules = set()
    root = tempfile.mkdtemp(prefix="rcb-floor-learn-")
    try:
        for candidate in job["candidates"]:
            modules_file = os.path.join(root, "modules.json")
            child = _start(candidate, root, modules_file)
            while os.read(child["fd"], 65536):
                pass
            os.waitpid(child["pid"], 0)
            os.close(child["pidfd"])
            os.close(child["fd"])
            if os.path.exists(modules_file):
                with open(modules_file) as f:
                    modules.update(json.load(f))
                os.unlink(modules_file)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    already = set(sys.modules)
    return {"modules": sorted(m for m in modules if m not in already and m != "__main__")}


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("run", "learn"):
        raise SystemExit("usage: floor-harness.py run|learn < job.json")
    _job = json.load(sys.stdin)
    _result = run(_job) if sys.argv[1] == "run" else learn(_job)
    sys.stdout.write(json.dumps(_result))
