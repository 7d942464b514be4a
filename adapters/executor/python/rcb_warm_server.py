"""rcb's warm test server: one per worker slot, inside that slot's bubblewrap sandbox.

It imports the driver and the heavy third-party modules once, then, per candidate,
forks a child that runs the paper's test entry point through ``rcb_driver.run_test``
exactly as ``python paper2code_test.py`` would in a fresh interpreter. The server
itself never runs candidate code, so every child starts from the same pristine state.

Channels (file descriptors of this process):

* fd 0: requests from rcb, one JSON object per line.
* fd 3: frames to rcb: one type byte, a 4-byte big-endian length, the payload.
  ``h`` hello (JSON), ``o``/``e`` the child's stdout/stderr bytes, ``r`` the driver's
  report bytes, ``d`` done (JSON).
* fd 1/2: the server's own diagnostics (never the child's output).

The child gets fresh pipes on fds 1, 2 and 3 (3 is the driver's report fd, as in the
cold executor), /dev/null on fd 0, and nothing else: it cannot reach the request or
frame channels. After each child the server kills the child's process group and ends
whatever else the child started; when there was anything it says so (``strays``) and
rcb replaces this whole worker. What it may signal depends on ``--contain``:

* ``namespace``: the server runs in a pid namespace of its own (bubblewrap's, whose init
  is its parent, pid 1; checked at start-up): every process there but init and the
  server is the child's;
* ``tree`` (the default): the server is a child subreaper and ends only its own
  descendants (see rcb_contain.py), and with ``--uid U --gid G`` (the server then runs
  as root) each child drops to that slot user before the test, and the slot uid's
  processes are ended after it; ``--seccomp`` puts each child under rcb_contain's filter
  (no_new_privs first). It never looks at another process of the machine.

SIGTERM ends the running child and everything it started, then the server. In tree mode
the death of the server's parent (rcb) sends it that SIGTERM.

Command line::

    python rcb_warm_server.py [--preload mod1,mod2,...] [--scratch dir1,dir2,...]
        [--contain tree|namespace] [--uid U --gid G] [--seccomp]

``--scratch`` names directories emptied after every child (the sandbox's /tmp and
/dev/shm); never given outside a sandbox.
"""

import sys
import time

_STARTED = time.monotonic()  # for the hello's account of the start-up

import rcb_driver  # noqa: E402 - first, so that its record of the startup modules is python's own
import rcb_contain  # noqa: E402 - standard library only, like the driver
import gc  # noqa: E402

# No collections while the preload runs: the imports allocate hundreds of thousands of
# objects that live as long as the server, and the collector passes over them cost ~20%
# of the start-up (740 against 960 ms on the 9 real papers). Python's own recipe for a
# fork server: collector off early, gc.freeze() before forking, on again after.
gc.disable()

import errno  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402

REQUEST_FD = 0
FRAME_FD = 3
CHILD_REPORT_FD = 3
# Output after which the child is killed comes from each request; this bounds one read.
READ_BYTES = 65536
# How often orphans of a running child, re-parented to the server, are reaped.
ORPHAN_REAP_SEC = 0.2


def _frame(kind, payload):
    data = kind + len(payload).to_bytes(4, "big") + payload
    while data:
        data = data[os.write(FRAME_FD, data):]


def _vm_size_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# Standard modules that do something when imported (open a browser, print, start a GUI):
# never imported for a test ahead of time.
_NEVER_PRELOAD = frozenset(
    ("antigravity", "this", "__hello__", "__phello__", "idlelib", "turtle", "turtledemo", "tkinter", "__main__")
)


def _preload(names):
    """Imports ``names`` (the papers' third-party and standard modules: unittest.mock alone
    costs a test 46 ms) in this server, so that every child finds them loaded."""
    loaded, failed = [], []
    for name in names:
        if not name or name.partition(".")[0] in _NEVER_PRELOAD or name in sys.modules:
            continue
        before = set(sys.modules)
        try:
            importlib.import_module(name)
            loaded.append(name)
        except BaseException as error:  # noqa: BLE001 - a module may even call sys.exit
            # A half-imported package must not linger: children would see a state
            # that no fresh interpreter has.
            for added in set(sys.modules) - before:
                del sys.modules[added]
            failed.append("%s: %s" % (name, type(error).__name__))
    return loaded, failed


def _cache_module_paths():
    """Resolve, once, the files of every module loaded so far, for all children.

    The driver resolves each loaded module's file (realpath) to tell workspace modules
    from the others; those files sit on the read-only system mounts and never change, so
    resolving them once here saves every child hundreds of lstat calls.
    """
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if isinstance(origin, str) and os.path.isabs(origin):
            rcb_driver.RESOLVED_PATHS[origin] = os.path.realpath(origin)


def _set_not_dumpable():
    """Children run as the same user: keep them from ptrace-ing or reading this process."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE, 0
    except Exception:
        return False


def _read_request(buffer):
    """Next request line (bytes), or None at end of input."""
    while b"\n" not in buffer:
        chunk = os.read(REQUEST_FD, 65536)
        if not chunk:
            return None
        buffer.extend(chunk)
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line


def _namespace_strays(own):
    """Live processes of the server's own pid namespace other than its init and the server.

    Only for ``--contain namespace``, whose start-up check makes /proc the namespace's.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in own:
            continue
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(pid)
    return found


def _check_own_namespace():
    """``--contain namespace`` is only for a server whose parent is its namespace's init."""
    if os.getppid() != 1:
        raise SystemExit(
            "rcb_warm_server.py: --contain namespace needs a pid namespace of its own "
            "(parent pid 1, as under bubblewrap); parent is %d" % os.getppid()
        )


class _Strays:
    """Ends what a child left behind, by the server's containment mode."""

    def __init__(self, contain, uid, gid, seccomp):
        self.namespace = contain == "namespace"
        self.tree = None if self.namespace else rcb_contain.Containment(uid, gid, seccomp, ender=True)
        self.current = None  # the running child's pid

    def start(self):
        if self.namespace:
            _check_own_namespace()
        else:
            self.tree.start()
        signal.signal(signal.SIGTERM, self._on_term)
        if self.tree is not None and self.tree.parent_gone():
            self._on_term(signal.SIGTERM, None)

    def end(self):
        """Kills everything the last child left; returns how many processes were alive."""
        if self.namespace:
            found = _namespace_strays({1, os.getpid()})
            for stray in found:
                try:
                    os.kill(stray, signal.SIGKILL)
                except OSError:
                    pass
            return len(found)
        found, gone = self.tree.end_all()
        return found if gone else max(found, 1)

    def reap_orphans(self, child):
        """Reaps orphans of the child re-parented here while it runs (tree mode)."""
        if self.namespace:
            return
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid == child:
                return
            try:
                os.waitpid(info.si_pid, 0)
            except ChildProcessError:
                return

    def in_child(self):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.tree is not None:
            self.tree.enter_child()

    def _on_term(self, _signum, _frame):
        if self.current is not None:
            _kill_group(self.current)
        self.end()
        os._exit(0)


def _empty_dir(path):
    """Remove everything under ``path`` (a test may leave dirs without permissions); True when empty."""
    try:
        entries = os.listdir(path)
    except OSError:
        return False
    for entry in entries:
        full = os.path.join(path, entry)
        try:
            if os.path.isdir(full) and not os.path.islink(full):
                os.chmod(full, 0o700)
                _empty_dir(full)
                os.rmdir(full)
            else:
                os.unlink(full)
        except OSError:
            pass
    try:
        return not os.listdir(path)
    except OSError:
        return False


def _exit_status(status):
    """Exit code as bwrap reports it for the cold executor: 128 + signal when signalled."""
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return None


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _supervise(pid, pipes, request, started, strays):
    """Relay the child's output until it has ended; return the done message."""
    deadline = started + float(request["timeoutSec"])
    max_output = int(request["maxOutputBytes"])
    kinds = {pipes[0]: b"o", pipes[1]: b"e", pipes[2]: b"r"}
    open_fds = set(kinds)
    output = 0
    killed_for = None
    status = None
    exited_at = None
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            now = time.monotonic()
            if status is None and killed_for is None and now >= deadline:
                killed_for = "timeout"
                _kill_group(pid)
            if status is not None and (not open_fds or now >= exited_at + 2.0):
                break  # pipes held open by an escaped process: stop waiting for them
            wait = [*open_fds] + ([pidfd] if status is None else [])
            timeout = max(0.0, (deadline if status is None else exited_at + 2.0) - now)
            if killed_for is not None and status is None:
                timeout = 0.05
            if strays.tree is not None:
                timeout = min(timeout, ORPHAN_REAP_SEC)
                strays.reap_orphans(pid)
            ready, _, _ = select.select(wait, [], [], timeout)
            for fd in ready:
                if fd == pidfd:
                    _, status = os.waitpid(pid, 0)
                    exited_at = time.monotonic()
                    # Whatever the test left in its process group dies with it.
                    _kill_group(pid)
                    continue
                try:
                    data = os.read(fd, READ_BYTES)
                except OSError as error:
                    if error.errno == errno.EINTR:
                        continue
                    data = b""
                if not data:
                    open_fds.discard(fd)
                    os.close(fd)
                    continue
                _frame(kinds[fd], data)
                if kinds[fd] != b"r":
                    output += len(data)
                    if output > max_output and killed_for is None and status is None:
                        killed_for = "output"
                        _kill_group(pid)
    finally:
        os.close(pidfd)
        for fd in open_fds:
            os.close(fd)
    duration_ms = int(((exited_at or time.monotonic()) - started) * 1000)
    return {
        "exitCode": _exit_status(status),
        "killedFor": killed_for,
        "durationMs": duration_ms,
    }


def _child(request, pipes_w, strays):
    """In the forked child: set up fds, session and user, then hand over to the driver."""
    os.setsid()
    strays.in_child()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(pipes_w[0], 1)
    os.dup2(pipes_w[1], 2)
    os.dup2(pipes_w[2], CHILD_REPORT_FD)
    os.closerange(CHILD_REPORT_FD + 1, 1 << 16)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as python sets it at startup
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # A fresh interpreter seeds numpy's global generator from the OS; a forked child
    # would otherwise share the server's state with every other child. (The random
    # module reseeds itself after fork; torch's initial seed is fixed anyway.)
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        try:
            np_random.seed()
        except Exception:
            pass
    limits = rcb_driver.Limits(
        int(request["memoryMb"]), int(request["maxProcesses"]), int(request["maxFileMb"])
    )
    return rcb_driver.run_test(
        request["workspace"], request["candidate"], CHILD_REPORT_FD, limits, request["script"]
    )


def _exit_like_python(exit_arg):
    """End the child as the interpreter would end ``python paper2code_test.py``, minus
    the teardown of the server's own modules (torch's alone takes ~0.2 s).

    Same order as Py_FinalizeEx: wait for non-daemon threads, run atexit handlers (the
    driver's report hook last), then clear the modules this run imported, __main__ first,
    so the test's own finalizers run; flush stdio and exit with python's status.
    """
    import threading

    if exit_arg is None:
        status = 0
    elif isinstance(exit_arg, int):
        status = exit_arg & 0xFF
    else:
        # Python prints any other exit value to stderr and exits 1.
        try:
            sys.stderr.write(str(exit_arg) + "\n")
        except Exception:
            pass
        status = 1
    try:
        threading._shutdown()
    except BaseException:
        pass
    import atexit

    atexit._run_exitfuncs()
    added = rcb_driver.modules_added()
    for name in ["__main__"] + added[::-1]:
        module = sys.modules.get(name)
        if module is not None:
            try:
                module.__dict__.clear()
            except Exception:
                pass
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            if status == 0:
                status = 120
    os._exit(status)


def serve(preload, scratch, strays):
    strays.start()
    baseline_kb = _vm_size_kb()
    began = time.monotonic()
    loaded, failed = _preload(preload)
    imported = time.monotonic()
    extra_mb = max(0, (_vm_size_kb() - baseline_kb) // 1024)
    _cache_module_paths()
    dumpable_off = _set_not_dumpable()
    preloaded = rcb_driver.Preloaded()
    # Objects of the server (and its preloaded modules) are never garbage to a child:
    # keep them out of its collections, and their pages shared. Then the collector runs
    # again, in the server and in every child, as in a fresh interpreter.
    gc.freeze()
    gc.enable()
    ms = lambda a, b: round((b - a) * 1000)  # noqa: E731
    _frame(b"h", json.dumps({
        "pid": os.getpid(), "preloaded": loaded, "failed": failed,
        "preloadMb": extra_mb, "notDumpable": dumpable_off,
        # Where the start-up went: the server's own imports, the preload, the bookkeeping after it.
        "startMs": {"server": ms(_STARTED, began), "preload": ms(began, imported), "index": ms(imported, time.monotonic())},
    }).encode())
    buffer = bytearray()
    while True:
        line = _read_request(buffer)
        if line is None:
            return None
        request = json.loads(line)
        # The limit bounds the test's own memory, not the modules the pool imported for it.
        request["memoryMb"] = int(request["memoryMb"]) + extra_mb
        # The children's bookkeeping, done here once: the index of what they inherit.
        if not preloaded.still_current():
            preloaded = rcb_driver.Preloaded()
        preloaded.in_workspace(os.path.realpath(request["workspace"]))
        rcb_driver.PRELOADED = preloaded
        pipes = [os.pipe() for _ in range(3)]
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            for read_end, _ in pipes:
                os.close(read_end)
            return request, [w for _, w in pipes]
        strays.current = pid
        for _, write_end in pipes:
            os.close(write_end)
        done = _supervise(pid, [r for r, _ in pipes], request, started, strays)
        done["strays"] = strays.end()
        strays.current = None
        # The sandbox's /tmp and /dev/shm outlive the child: empty them, as a fresh
        # sandbox would have them, or have this worker replaced.
        done["dirty"] = [d for d in scratch if not _empty_dir(d)]
        _frame(b"d", json.dumps(done).encode())


def _parse(argv):
    usage = (
        "usage: rcb_warm_server.py [--preload mod1,mod2,...] [--scratch dir1,dir2,...] "
        "[--contain tree|namespace] [--uid U --gid G] [--seccomp]"
    )
    seccomp = "--seccomp" in argv
    argv = [a for a in argv if a != "--seccomp"]
    options = {"--preload": "", "--scratch": "", "--contain": "tree", "--uid": None, "--gid": None}
    if len(argv) % 2 or any(a not in options for a in argv[0::2]):
        raise SystemExit(usage)
    options.update(zip(argv[0::2], argv[1::2]))
    if options["--contain"] not in ("tree", "namespace"):
        raise SystemExit(usage)
    if options["--contain"] == "namespace" and (options["--uid"] is not None or seccomp):
        raise SystemExit("rcb_warm_server.py: --uid and --seccomp are for --contain tree (bubblewrap isolates a namespace)")
    split = lambda value: [n for n in value.split(",") if n]  # noqa: E731
    number = lambda value: None if value is None else int(value)  # noqa: E731
    strays = _Strays(options["--contain"], number(options["--uid"]), number(options["--gid"]), seccomp)
    return split(options["--preload"]), split(options["--scratch"]), strays


if __name__ == "__main__":
    _PRELOAD, _SCRATCH, _STRAYS = _parse(sys.argv[1:])
    _job = serve(_PRELOAD, _SCRATCH, _STRAYS)
    if _job is None:
        sys.exit(0)
    # In the forked child, with the server's frames gone from the stack.
    _request, _pipes = _job
    _exit_like_python(_child(_request, _pipes, _STRAYS))
