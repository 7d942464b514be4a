"""Process containment without a pid namespace: end every process a test started, and
nothing else.

A test may leave processes behind: background children, double-forked daemons in
sessions of their own, fork bombs. Inside bubblewrap's pid namespace they all die with
the namespace. Without one (``--unsafe-no-sandbox``, the uid sandbox where user
namespaces are refused), what gets signalled is bounded by construction:

* the supervisor (the warm server, or this file run as the cold executor's wrapper) is a
  child subreaper (PR_SET_CHILD_SUBREAPER): an orphan of the test is re-parented to it
  rather than to init, so every process the test started stays its descendant;
* after the test it SIGKILLs each of its descendants through a pidfd, opened while that
  process's parent (a checked descendant, or the supervisor) was alive and still its
  parent, so a pid freed and handed to another process meanwhile is never signalled;
  it reaps the orphans that come to it and repeats until nothing is left (a fork bomb
  included: the whole tree is killed in every round, not one generation);
* when the test ran as a uid of its own (a slot user: rcb runs as root), a helper forked
  from the supervisor takes that uid and sends SIGKILL to -1: the kernel signals exactly
  the processes of that uid, never another user's, never the helper itself.

Never signalled: a process of another user, one that existed before the test, the
supervisor, rcb or their parents.

Command line (the cold executor's wrapper)::

    python rcb_contain.py [--uid U --gid G] [--seccomp] [--status-fd N] -- COMMAND [ARG...]

runs COMMAND in a session of its own (as U:G with no supplementary groups, when given;
that needs root; with ``--seccomp`` under no_new_privs and the filter below), waits for it, ends whatever it left, and exits as COMMAND did (by the
same signal when one ended it). With ``--status-fd``, it writes ``{"exit-code": N}`` or
``{"exit-signal": S}`` there the moment COMMAND ends, before the clean-up, so that the
caller's time limit covers the test and not rcb's clean-up (COMMAND never has that fd).
SIGTERM to the wrapper ends COMMAND and everything it started, then the wrapper itself
with SIGKILL. The death of the wrapper's parent (rcb) sends it that SIGTERM.
"""

import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

# How long one clean-up may keep killing (a fork bomb within its process limit ends in
# a few rounds); past it the caller is told that something may be left.
END_TIMEOUT_SEC = 10.0

_libc = None


def prctl(option, value):
    """prctl(2) through libc (Python has no binding); raises OSError on failure."""
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        import ctypes

        error = ctypes.get_errno()
        raise OSError(error, "prctl(%d): %s" % (option, os.strerror(error)))


def become_subreaper():
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def drop_to(uid, gid):
    """Become uid:gid for good (real, effective and saved ids), with no supplementary groups."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError("rcb: could not drop to uid %d gid %d" % (uid, gid))


def _children_of(pid):
    """Pids of ``pid``'s children, zombies included, from its /proc task entries."""
    found = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return found
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                found.extend(int(p) for p in f.read().split())
        except FileNotFoundError:
            if pid == os.getpid():
                return _children_by_parent()
        except OSError:
            continue
    return found


def own_children():
    """Pids of this process's children, zombies included."""
    return _children_of(os.getpid())


def _children_by_parent():
    """Fallback for kernels without /proc/PID/task/TID/children: entries whose parent is
    this process. Only read; what is signalled is still an unreaped child of ours."""
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if _stat_fields(int(entry))[1] == me:
                    pids.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return pids


def _stat_fields(pid):
    """(state, ppid) of a process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rpartition(")")[2].split()
    return rest[0], int(rest[1])


def _alive(pid):
    try:
        return _stat_fields(pid)[0] not in ("Z", "X")
    except (OSError, ValueError, IndexError):
        return False


def _signal(pidfd, sig):
    try:
        signal.pidfd_send_signal(pidfd, sig)
        return True
    except ProcessLookupError:
        return False


def _descendants():
    """Every live descendant, as {pid: pidfd}, each one checked to be what it seems.

    A pid is taken only through a pidfd opened while the process's parent, itself a
    checked descendant held by its own pidfd (or this process), is alive and still its
    parent: a pid that was freed and handed to another process meanwhile never passes.
    """
    me = os.getpid()
    held = {}
    queue = [(me, None)]
    while queue:
        parent, parent_fd = queue.pop()
        for pid in _children_of(parent):
            if pid in held:
                continue
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                state, ppid = _stat_fields(pid)
            except (OSError, ValueError, IndexError):
                os.close(fd)
                continue
            if ppid != parent or (parent_fd is not None and not _signal(parent_fd, 0)) or not _signal(fd, 0):
                os.close(fd)
                continue
            held[pid] = fd
            if state not in ("Z", "X"):
                queue.append((pid, fd))
    return held


def _reap_children():
    """Reaps whatever children have ended; True while some are left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_descendants(timeout=END_TIMEOUT_SEC):
    """SIGKILL every descendant, reap what ends up here (orphans are re-parented to this
    subreaper), and repeat with any process forked meanwhile until none is left.
    Returns (processes found alive, all gone)."""
    if not hasattr(os, "pidfd_open"):
        return _end_children_only(timeout)
    found = 0
    seen = set()
    deadline = time.monotonic() + timeout
    while True:
        # Stop the whole tree first (a stopped process forks no more), then kill it.
        held = _descendants()
        for pid, fd in held.items():
            if pid not in seen and _alive(pid):
                seen.add(pid)
                found += 1
            _signal(fd, signal.SIGSTOP)
        for fd in held.values():
            _signal(fd, signal.SIGKILL)
            os.close(fd)
        if not _reap_children() and not held:
            return found, True
        if time.monotonic() > deadline:
            return found, False
        time.sleep(0.001)


def _end_children_only(timeout):
    """Without pidfds: SIGKILL this process's own unreaped children only (their pids
    cannot be reused before they are reaped here), reap them, and repeat."""
    found = 0
    deadline = time.monotonic() + timeout
    while True:
        children = own_children()
        if not children:
            return found, True
        for pid in children:
            found += _alive(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        if time.monotonic() > deadline:
            return found, not own_children()


# --- seccomp: the uid sandbox's kernel filter ------------------------------------------
#
# rcb writes its own BPF program rather than use libseccomp's Python binding: the
# interpreter that runs the tests (a venv in the image) need not see Debian's
# python3-seccomp, nothing is imported into the test's process, and the whole policy
# is this table, checked against the architecture so a syscall number of another ABI
# (x32, i386 through int 0x80) can never be read as one of this one.

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000

# name: (x86_64, aarch64)
_SYSCALLS = {
    "socket": (41, 198),
    "socketpair": (53, 199),
    "clone": (56, 220),
    "clone3": (435, 435),
    "unshare": (272, 97),
    "setns": (308, 268),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
}

# Refused outright with EPERM: another process's memory, namespaces and mounts, kernel
# objects shared across users (keys), the kernel's own programs and modules, and
# io_uring (which performs socket and file operations without these syscalls).
SECCOMP_REFUSED = (
    "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf", "perf_event_open",
    "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "open_by_handle_at", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff",
)
# Flags of clone(2) that make a namespace.
CLONE_NAMESPACE_FLAGS = 0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
AF_UNIX = 1
_EPERM, _ENOSYS, _EAFNOSUPPORT = 1, 38, 97

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LOW = 0, 4, 16  # struct seccomp_data, little-endian


def seccomp_program(machine=None):
    """The filter as BPF instructions (code, jt, jf, k): sockets of any family but AF_UNIX
    fail with EAFNOSUPPORT, clone with a namespace flag and the SECCOMP_REFUSED syscalls
    with EPERM, clone3 with ENOSYS (its flags are out of a filter's reach; libc then falls
    back to clone); any other architecture or ABI kills the process."""
    machine = machine or os.uname().machine
    if machine not in _AUDIT_ARCH:
        raise OSError("rcb: no seccomp filter for the %s architecture" % machine)
    column = 0 if machine == "x86_64" else 1
    nr = {name: numbers[column] for name, numbers in _SYSCALLS.items()}
    errno_ret = lambda e: _RET_ERRNO | e  # noqa: E731
    prog = [
        (_LD_ABS_W, 0, 0, _OFF_ARCH),
        (_JEQ, 1, 0, _AUDIT_ARCH[machine]),
        (_RET, 0, 0, _RET_KILL_PROCESS),
        (_LD_ABS_W, 0, 0, _OFF_NR),
    ]
    if machine == "x86_64":
        prog += [(_JGE, 0, 1, _X32_SYSCALL_BIT), (_RET, 0, 0, _RET_KILL_PROCESS)]
    for family_call in ("socket", "socketpair"):
        prog += [
            (_JEQ, 0, 4, nr[family_call]),
            (_LD_ABS_W, 0, 0, _OFF_ARG0_LOW),
            (_JEQ, 0, 1, AF_UNIX),
            (_RET, 0, 0, _RET_ALLOW),
            (_RET, 0, 0, errno_ret(_EAFNOSUPPORT)),
        ]
    prog += [
        (_JEQ, 0, 4, nr["clone"]),
        (_LD_ABS_W, 0, 0, _OFF_ARG0_LOW),
        (_JSET, 0, 1, CLONE_NAMESPACE_FLAGS),
        (_RET, 0, 0, errno_ret(_EPERM)),
        (_RET, 0, 0, _RET_ALLOW),
        (_JEQ, 0, 1, nr["clone3"]),
        (_RET, 0, 0, errno_ret(_ENOSYS)),
    ]
    for name in SECCOMP_REFUSED:
        prog += [(_JEQ, 0, 1, nr[name]), (_RET, 0, 0, errno_ret(_EPERM))]
    prog.append((_RET, 0, 0, _RET_ALLOW))
    return prog


class SeccompFilter:
    """A filter built once (in the supervisor, before it forks) and installed in a child."""

    def __init__(self, program):
        import ctypes
        import struct

        self._ctypes = ctypes
        blob = b"".join(struct.pack("<HBBI", *insn) for insn in program)
        self._buffer = ctypes.create_string_buffer(blob, len(blob))

        class _Fprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self._fprog = _Fprog(len(program), ctypes.cast(self._buffer, ctypes.c_void_p))

    def install(self):
        """no_new_privs, then the filter, for this thread and all it starts (irrevocably)."""
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        ctypes = self._ctypes
        if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._fprog), 0, 0) != 0:
            error = ctypes.get_errno()
            raise OSError(error, "rcb: cannot install the seccomp filter: %s" % os.strerror(error))


PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _uid_has_other_processes():
    """In a helper that has taken a slot uid: whether any other process has that uid.

    kill(2) lets an unprivileged process signal only processes of its own uid, so a
    signal 0 that is not refused finds one. kill(-1) cannot tell: it reports success
    whenever the namespace holds any other process at all, even one it may not signal.
    A zombie does not count: it runs nothing, and one killed earlier (by the last clean-up
    of this uid, whose orphans init reaps in its own time) would be reported as a new stray.
    """
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            os.kill(int(entry), 0)
        except (ProcessLookupError, PermissionError):
            continue
        if _alive(int(entry)):
            return True
    return False


def end_uid(uid, gid):
    """SIGKILL every process of ``uid`` from a helper that takes that uid (needs root).

    Returns True when there was one. The helper is never signalled itself (kill(2) with
    -1 spares the caller), and a uid of a slot is used by nothing but that slot. A process
    that the uid starts after the look is killed all the same, and its parent was seen.
    """
    if uid <= 0 or uid == os.getuid():
        raise ValueError("rcb: end_uid needs a slot uid other than root and ours, got %d" % uid)
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            drop_to(uid, gid)
            code = 1 if _uid_has_other_processes() else 0
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise OSError("rcb: the helper that ends uid %d's processes failed (%d)" % (uid, code))
    return code == 1


class UidEnder:
    """A small root process that runs ``end_uid`` for a supervisor, on request.

    end_uid forks its helper from the caller, and a fork of a warm server holding ~1,500
    modules took ~35 ms (against ~3 ms from a small process), after every test. This
    process is forked before the supervisor imports anything and before it becomes a
    subreaper, and leaves through a double fork, so it is no descendant of the supervisor:
    the sweep of the descendants never counts or kills it. It keeps only its two pipes
    (the tests never get them: they are above fd 3) and exits when the supervisor's ends
    close. Like the supervisor it is root and not dumpable.
    """

    def __init__(self, uid, gid):
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                if os.fork() == 0:
                    keep = sorted((request_r, answer_w))
                    os.closerange(0, keep[0])
                    os.closerange(keep[0] + 1, keep[1])
                    os.closerange(keep[1] + 1, 1 << 16)
                    self._serve(request_r, answer_w, uid, gid)
            finally:
                os._exit(0)
        os.close(request_r)
        os.close(answer_w)
        os.waitpid(pid, 0)
        self._request = request_w
        self._answer = answer_r

    @staticmethod
    def _serve(request, answer, uid, gid):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ends with its pipe, not with a group signal mid-answer
        while os.read(request, 1):
            try:
                reply = b"1" if end_uid(uid, gid) else b"0"
            except Exception:  # noqa: BLE001 - the supervisor is told, and decides
                reply = b"2"
            os.write(answer, reply)

    def end(self):
        """Whether the uid had a process (now killed), as end_uid."""
        os.write(self._request, b"e")
        reply = os.read(self._answer, 1)
        if reply not in (b"0", b"1"):
            raise OSError("rcb: the process that ends the slot uid's processes failed or is gone")
        return reply == b"1"


class Containment:
    """What a supervisor ends after each test (its descendants, then the slot uid's
    processes), and what it puts on each test child (the slot's uid, the seccomp filter).

    With ``ender`` (a long-lived supervisor such as the warm server), the slot uid's
    processes are ended by a UidEnder made at ``start``, which must then come before the
    supervisor grows."""

    def __init__(self, uid=None, gid=None, seccomp=False, ender=False):
        if (uid is None) != (gid is None):
            raise ValueError("rcb: give both uid and gid, or neither")
        if uid is not None and os.getuid() != 0:
            raise ValueError("rcb: a slot uid needs the supervisor to run as root")
        self.uid = uid
        self.gid = gid
        self.seccomp = SeccompFilter(seccomp_program()) if seccomp else None
        self._want_ender = ender and uid is not None
        self._ender = None

    def start(self):
        self.parent = os.getppid()
        # The supervisor runs as root beside the tests' uid: keep its memory and fds out
        # of reach even of a process that got its uid.
        prctl(PR_SET_DUMPABLE, 0)
        if self._want_ender:
            # Before the subreaper bit, so that the ender's double fork leaves this tree.
            self._ender = UidEnder(self.uid, self.gid)
        become_subreaper()
        # rcb enforces the tests' time limits and ends this supervisor. If rcb dies
        # (SIGKILL, the OOM killer, a killed terminal) the tests would run on for good, a
        # fork bomb filling the user's process limit: its death sends SIGTERM here, whose
        # handler ends every descendant. A caller checks parent_gone() once the handler is
        # in place, for a death before this prctl.
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    def parent_gone(self):
        """Whether the process that started this supervisor has already died."""
        return os.getppid() != self.parent

    def end_all(self):
        """Ends everything the tests started; returns (processes found alive, all gone)."""
        found, gone = end_descendants()
        if self.uid is not None:
            had = self._ender.end() if self._ender is not None else end_uid(self.uid, self.gid)
            if had:
                found += 1
        return found, gone

    def enter_child(self):
        """In the forked test process, before any test code: the slot's uid, then the filter."""
        if self.uid is not None:
            drop_to(self.uid, self.gid)
        if self.seccomp is not None:
            self.seccomp.install()


def _exit_as(status):
    """Exit as a child with wait status ``status`` did: the same code, or the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _parse(argv):
    usage = "usage: rcb_contain.py [--uid U --gid G] [--seccomp] [--status-fd N] -- COMMAND [ARG...]"
    if "--" not in argv:
        raise SystemExit(usage)
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    seccomp = "--seccomp" in options
    options = [o for o in options if o != "--seccomp"]
    names = ("--uid", "--gid", "--status-fd")
    if not command or len(options) % 2 or any(o not in names for o in options[0::2]):
        raise SystemExit(usage)
    values = dict(zip(options[0::2], (int(v) for v in options[1::2])))
    return values.get("--uid"), values.get("--gid"), seccomp, values.get("--status-fd"), command


def _write_status(fd, status):
    if fd is None:
        return
    if os.WIFSIGNALED(status):
        text = '{"exit-signal": %d}\n' % os.WTERMSIG(status)
    else:
        text = '{"exit-code": %d}\n' % os.waitstatus_to_exitcode(status)
    try:
        os.write(fd, text.encode())
        os.close(fd)
    except OSError:
        pass


def main(argv):
    uid, gid, seccomp, status_fd, command = _parse(argv)
    if status_fd is not None:
        os.set_inheritable(status_fd, False)
    contain = Containment(uid, gid, seccomp)
    contain.start()

    def stop(_signum, _frame):
        contain.end_all()
        os.kill(os.getpid(), signal.SIGKILL)

    # Before the fork: a SIGTERM that comes early must still end the command.
    signal.signal(signal.SIGTERM, stop)
    if contain.parent_gone():
        stop(signal.SIGTERM, None)
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.setsid()
            contain.enter_child()
            os.execvp(command[0], command)
        except BaseException as error:  # noqa: BLE001 - report anything, then leave
            os.write(2, ("rcb_contain: cannot run %s: %s\n" % (command[0], error)).encode())
        os._exit(127)

    while True:
        # Reap orphans as they die (they are ours now), until the command itself ends.
        done, status = os.waitpid(-1, 0)
        if done == pid:
            break
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _write_status(status_fd, status)
    _, gone = contain.end_all()
    if not gone:
        os.write(2, b"rcb_contain: processes of the test may be left\n")
    _exit_as(status)


if __name__ == "__main__":
    main(sys.argv[1:])
