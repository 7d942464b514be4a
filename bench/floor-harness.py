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
                                -> {"passes": [bool...]}
    python floor-harness.py learn  {"candidates": [...]}  (one per paper, run in turn)
                                -> {"modules": [names imported from outside the folders]}
"""

import importlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time

MARKERS = ("Error:", "Exception:", "Traceback", "failed")
TEST_ENTRY = "paper2code_test.py"


def _workspace(candidate, root):
    ws = tempfile.mkdtemp(dir=root)
    shutil.copytree(candidate["dir"], ws, dirs_exist_ok=True)
    with open(os.path.join(ws, candidate["file"]), "w") as f:
        f.write(candidate["source"])
    return ws


def _run_in_child(ws, out_fd, modules_fd=None):
    """In the forked child: run the test entry as python would; never returns."""
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.chdir(ws)
    sys.path.insert(0, ws)
    sys.argv[:] = [TEST_ENTRY]
    status = 0
    try:
        import runpy

        runpy.run_path(TEST_ENTRY, run_name="__main__")
    except SystemExit as error:
        code = error.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    if modules_fd is not None:
        outside = []
        for name, module in list(sys.modules.items()):
            origin = getattr(module, "__file__", None) or ""
            if not os.path.realpath(origin).startswith(os.path.realpath(ws) + os.sep):
                outside.append(name)
        os.write(modules_fd, json.dumps(outside).encode())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status & 0xFF)


def _start(candidate, root, learn_fd=None):
    ws = _workspace(candidate, root)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _run_in_child(ws, write_end, learn_fd)
    os.close(write_end)
    return {"pid": pid, "fd": read_end, "out": bytearray(), "ws": ws, "started": time.monotonic()}


def _finish(child):
    _, status = os.waitpid(child["pid"], 0)
    os.close(child["fd"])
    shutil.rmtree(child["ws"], ignore_errors=True)
    text = child["out"].decode("utf-8", "replace")
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and not any(m in text for m in MARKERS)


def run(job):
    for name in job.get("preload", []):
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a module that fails to import is not preloaded
            pass
    candidates = job["candidates"]
    jobs = int(job.get("jobs", 1))
    timeout = float(job.get("timeoutSec", 60))
    passes = [False] * len(candidates)
    root = tempfile.mkdtemp(prefix="rcb-floor-")
    running = {}  # fd -> (index, child)
    following = 0
    try:
        while following < len(candidates) or running:
            while following < len(candidates) and len(running) < jobs:
                child = _start(candidates[following], root)
                running[child["fd"]] = (following, child)
                following += 1
            ready, _, _ = select.select(list(running), [], [], 0.5)
            for fd in ready:
                index, child = running[fd]
                data = os.read(fd, 65536)
                if data:
                    child["out"] += data
                    continue
                del running[fd]
                passes[index] = _finish(child)
            now = time.monotonic()
            for _, child in running.values():
                if now - child["started"] > timeout:
                    os.kill(child["pid"], signal.SIGKILL)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"passes": passes}


def learn(job):
    modules = set()
    root = tempfile.mkdtemp(prefix="rcb-floor-learn-")
    try:
        for candidate in job["candidates"]:
            learn_r, learn_w = os.pipe()
            child = _start(candidate, root, learn_w)
            os.close(learn_w)
            while True:
                data = os.read(child["fd"], 65536)
                if not data:
                    break
            found = bytearray()
            while True:
                data = os.read(learn_r, 65536)
                if not data:
                    break
                found += data
            os.close(learn_r)
            _finish(child)
            if found:
                modules.update(json.loads(found.decode()))
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
