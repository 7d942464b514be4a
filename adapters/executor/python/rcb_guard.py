"""rcb's verdict guard: evidence for the strict judge that the answer cannot forge.

The answer runs in the test's own interpreter, so anything the driver keeps in a Python
object it can reach (a module global, a closure cell, a wrapper's attributes) the answer
can reach too. The guard keeps its state where plain attribute access cannot get: in the
closure of an audit hook (``sys.addaudithook``: hooks cannot be removed, and only
``gc`` (itself audited) lists them). Everything else talks to it through ``sys.audit``
events, and it writes what it learns to the report fd at once, so that nothing done later
in the process can take a flag back. See docs/security.md, "Verdicts an answer cannot
forge".

The report fd carries JSON lines: ``{"start": NONCE}`` before any test code runs, then
``{"flag": NAME}`` and ``{"count": [...]}`` as they happen, then ``{"end": NONCE, ...}``
from the interpreter's last atexit hook. The nonce lives only in the hook's closure, so
a report written by the answer (it can guess the fd) does not carry it.

What the hook watches (innermost workspace frame = the file of the paper that asked):

* ``reference_access``: code of a ``*_ref`` file ran while the candidate file's code was
  further out on the stack (the reference reached from the answer, by whatever name), or
  the candidate imported or opened a ``*_ref`` file;
* ``forged_check``: the candidate file's code ran as part of one of the test's checks
  (an ``assert*``, ``isclose``, ``allclose``... call of the test script: a fake helper,
  a patched method, a dunder of a returned object); a call of the candidate changed a
  binding of the test module, of a reference module, of ``builtins`` or of a comparison
  helper (numpy, torch, math, unittest); a check helper called from the test was a
  builtin of another name;
* ``introspection``: the candidate asked for frames or the collector's object lists;
* ``dynamic_code``: the candidate compiled or executed code, or made code or functions;
* ``native_code``: the candidate called into ctypes;
* ``judge_tampered``: the profile function, the guard's wrappers or the unittest
  machinery were replaced, a guard event came from elsewhere, or tracing was changed.
"""

import _thread
import ast
import json
import os
import sys

FLAG_REFERENCE = "reference_access"
FLAG_FORGED = "forged_check"
FLAG_INTROSPECTION = "introspection"
FLAG_DYNAMIC = "dynamic_code"
FLAG_NATIVE = "native_code"
FLAG_TAMPERED = "judge_tampered"
FLAG_ERROR = "judge_error"
FLAG_THREAD = "thread_start"

# Names of calls in the test script that decide a verdict.
_CHECK_PREFIXES = ("assert", "fail")
_CHECK_NAMES = frozenset((
    "isclose", "allclose", "array_equal", "array_equiv", "equal", "all", "any", "isfinite",
    "bool", "is_close", "assert_close",
))

# Bindings a forged check would replace: (module name, attribute names or None for all).
_WATCHED_MODULES = (
    ("builtins", None),
    ("math", ("isclose", "fabs", "isfinite", "isnan", "isinf")),
    ("cmath", ("isclose",)),
    ("operator", None),
    ("numpy", ("allclose", "isclose", "array_equal", "array_equiv", "all", "any", "abs",
               "testing", "asarray", "array", "max", "isfinite")),
    ("numpy.testing", None),
    ("numpy.core.numeric", ("isclose", "allclose", "all", "array_equal", "asanyarray")),
    ("torch", ("allclose", "isclose", "equal", "all", "any", "abs", "max", "testing",
               "is_tensor", "Tensor", "tensor", "norm", "sum", "mean", "eq", "ne", "lt",
               "le", "gt", "ge", "isfinite", "isnan", "sub", "as_tensor")),
    ("torch.testing", None),
    ("unittest", None),
    ("unittest.case", None),
    ("unittest.result", None),
    ("unittest.runner", None),
    ("unittest.main", None),
    ("sys", ("exit", "audit", "modules", "excepthook")),
    ("os", ("_exit",)),
)
# Classes whose methods a forged check would replace: (module, class, names or None).
_WATCHED_CLASSES = (
    ("unittest.case", "TestCase", None),
    ("unittest.case", "_Outcome", None),
    ("unittest.result", "TestResult", None),
    ("unittest.runner", "TextTestResult", None),
    ("unittest.runner", "TextTestRunner", None),
    ("unittest.suite", "BaseTestSuite", None),
    ("unittest.suite", "TestSuite", None),
    ("unittest.main", "TestProgram", None),
    ("torch", "Tensor", ("__eq__", "__ne__", "__bool__", "__float__", "__lt__", "__le__",
                         "__gt__", "__ge__", "__sub__", "__abs__", "allclose", "isclose",
                         "equal", "all", "any", "item", "tolist", "abs", "max", "eq",
                         "__torch_function__", "numpy")),
)

# Audit events and the flag each raises when the candidate file asked for it.
_ATTRIBUTED_EVENTS = {
    "sys._getframe": FLAG_INTROSPECTION,
    "sys._current_frames": FLAG_INTROSPECTION,
    "gc.get_objects": FLAG_INTROSPECTION,
    "gc.get_referrers": FLAG_INTROSPECTION,
    "gc.get_referents": FLAG_INTROSPECTION,
    "object.__getattr__": FLAG_INTROSPECTION,
    "code.__new__": FLAG_DYNAMIC,
    "function.__new__": FLAG_DYNAMIC,
    # The candidate switching the profile off and on again around a call of the reference.
    "sys.setprofile": FLAG_TAMPERED,
}
# Raised when the candidate's own code is the direct caller (imports compile and exec too).
_DIRECT_EVENTS = {"compile": FLAG_DYNAMIC, "exec": FLAG_DYNAMIC}
# Attributes whose assignment (an audited event) changes what an object does in place.
_REBINDING_ATTRIBUTES = frozenset(("__code__", "__defaults__", "__kwdefaults__", "__class__"))
# Builtins through which a check's arguments run code of their own (iteration, conversion).
_TRIGGER_NAMES = frozenset((
    "zip", "iter", "next", "list", "tuple", "set", "dict", "len", "float", "int", "abs", "sum",
    "map", "filter", "sorted", "reversed", "enumerate", "str", "repr", "bool", "max", "min",
    "round", "hash", "format", "isinstance", "issubclass", "getattr", "hasattr", "vars",
))
# Events the guard's own code raises while it runs.
_OWN_EVENTS = frozenset(("sys._getframe", "object.__getattr__"))
_REENTRANT_FLAGS = {**_ATTRIBUTED_EVENTS, **_DIRECT_EVENTS}
# Raised whoever asks: nothing of a paper's test needs them once the guard is in place.
# (sys.setprofile is attributed instead: threading sets the guard's own profile in each new
# thread; _State.verify checks that the profile is still the guard's.)
_ALWAYS_EVENTS = {
    "sys.settrace": FLAG_TAMPERED,
    "sys.addaudithook": FLAG_TAMPERED,
}


def check_sites(source, filename):
    """Spans (line, end line, column, end column) of the script's calls, each with whether it is a check."""
    try:
        tree = ast.parse(source, filename)
    except (SyntaxError, ValueError):
        return ()
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.end_lineno is not None:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            check = name in _CHECK_NAMES or name.startswith(_CHECK_PREFIXES)
            sites.append(((node.lineno, node.end_lineno, node.col_offset, node.end_col_offset), check, name))
    return tuple(sites)


def _contains(outer, inner):
    (l1, e1, c1, d1), (l2, e2, c2, d2) = outer, inner
    if None in inner:
        return False
    return (l1, c1) <= (l2, c2) and (e2, d2) <= (e1, d1)


def _site_at(sites, position):
    """The innermost call of the script whose span holds `position`, or None."""
    best = None
    for site in sites:
        if _contains(site[0], position) and (best is None or _contains(best[0], site[0])):
            best = site
    return best


def _runs_inside_check(sites, position):
    """Whether code reached from the script's instruction at `position` takes part in a check.

    Inside a check's arguments the candidate's code may run only as the function a call of
    the test names (``assertTrue(torch.allclose(model(x), ref))`` runs ``model``); run by
    an operator, an attribute or a builtin over its value (``zip(got, want)``, ``out - ref``),
    it decides the check's outcome itself.
    """
    innermost = _site_at(sites, position)
    if innermost is None:
        return False
    if innermost[1]:
        return True
    if not any(site[1] and _contains(site[0], position) for site in sites):
        return False
    return innermost[0] != tuple(position) or innermost[2] in _TRIGGER_NAMES


def install(workspace, candidate, script, report_fd, watched, wrappers, trusted):
    """Install the guard and the profile function; return the function to register with atexit.

    `workspace` is a real path, `candidate` and `script` workspace-relative; `watched`
    the driver's list of (owner, name, original) of the unittest machinery; `wrappers`
    the driver's functions whose defaults and code must stay as installed (the two that
    report test counts first); `trusted` the code objects that may report how the script
    ended. Call it last before the script runs: it writes the report's first line.
    """
    state = _State(workspace, candidate, script, report_fd, watched, wrappers, trusted)
    end = state.end_function()
    sys.setprofile(state.trampoline)
    threading = sys.modules.get("threading")
    if threading is not None:
        threading.setprofile(state.trampoline)
    sys.addaudithook(state.make_hook())
    state.send({"start": state.nonce})
    return end


class _State:
    """The guard's state; reachable only from the audit hook's closure (see make_hook)."""

    def __init__(self, workspace, candidate, script, report_fd, watched, wrappers, trusted):
        self.prefix = workspace + os.sep
        self.candidate = os.path.join(workspace, candidate)
        self.script = os.path.join(workspace, script)
        self.fd = report_fd
        stat = os.fstat(report_fd)
        self.fd_identity = (stat.st_dev, stat.st_ino)
        self.nonce = os.urandom(16).hex()
        self.write, self.fstat, self.kill, self.getpid = os.write, os.fstat, os.kill, os.getpid
        self.getframe, self.modules, self.getprofile = sys._getframe, sys.modules, sys.getprofile
        self.pid = os.getpid()
        self.sent = set()
        self.kinds = {}
        self.counts = [0] * 6
        self.ending = None
        self.watched = tuple(watched)
        self.wrappers = tuple((w, w.__code__, w.__defaults__) for w in wrappers)
        self.positions = {}
        self.paper_files = _python_files(workspace)
        self.ref_dicts = []
        self.depth = 0
        self.snapshot = ()
        self.busy = set()
        self.done = False
        self.get_ident = _thread.get_ident
        with open(self.script, "rb") as handle:
            self.sites = check_sites(handle.read(), self.script)
        self.trampoline = _make_trampoline(self.prefix, self.script)
        self.trampoline_code = self.trampoline.__code__
        self.trampoline_defaults = self.trampoline.__defaults__
        self.end_code = None
        self.count_codes = frozenset(w.__code__ for w in wrappers[:2])
        self.trusted = frozenset(trusted)
        # Frames of these files ask for frames on their own account, never the answer's.
        self.own_files = frozenset([c.co_filename for c in trusted] + [_make_trampoline.__code__.co_filename])

    # -- channel ------------------------------------------------------------------------

    def send(self, message):
        data = (json.dumps(message) + "\n").encode("utf-8")
        try:
            stat = self.fstat(self.fd)
            if (stat.st_dev, stat.st_ino) != self.fd_identity:
                raise OSError("report fd replaced")
            while data:
                data = data[self.write(self.fd, data):]
        except OSError:
            # The channel is gone or replaced: no report may stand for this run.
            self.kill(self.getpid(), 9)

    def flag(self, name):
        if name not in self.sent:
            self.sent.add(name)
            self.send({"flag": name})

    # -- files ------------------------------------------------------------------------

    def kind(self, filename):
        """'cand', 'ref', 'test', 'ws' (other paper file) or None for code outside the workspace."""
        found = self.kinds.get(filename, 0)
        if found != 0:
            return found
        found = None
        if isinstance(filename, str) and filename.startswith(self.prefix):
            full = os.path.realpath(filename)
            if full == self.candidate:
                found = "cand"
            elif full == self.script:
                found = "test"
            elif full.endswith("_ref.py"):
                found = "ref"
            elif full in self.paper_files:
                found = "ws"
            elif full.startswith(self.prefix):
                # Code the run wrote into the workspace is the answer's.
                found = "cand"
        self.kinds[filename] = found
        return found

    def innermost(self, frame):
        """Kind of the innermost workspace frame from `frame` outwards.

        None when an import comes first: the module being imported asked (a library's
        own start-up; a module file the answer wrote counts as the candidate's, see kind).
        """
        while frame is not None:
            filename = frame.f_code.co_filename
            found = self.kind(filename)
            if found is not None:
                return found
            if filename.startswith("<frozen importlib"):
                return None
            frame = frame.f_back
        return None

    def attributed(self, frame):
        """Kind of the paper's file that raised an event in `frame` itself or through a helper.

        The helpers are the standard library's frame getters (inspect, traceback,
        logging): a library between them and the paper's code (torch recording a stack
        for its own use) asked on its own account, and so did rcb's own code.
        """
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename in self.own_files:
                return None
            found = self.kind(filename)
            if found is not None:
                return found
            if filename not in _HELPER_FILES:
                return None
            frame = frame.f_back
        return None

    # -- the hook ---------------------------------------------------------------------

    def make_hook(self):
        state = self

        def hook(event, args):
            if state.done or state.getpid() != state.pid:
                return
            thread = state.get_ident()
            if thread in state.busy:
                # Raised by code that ran inside the guard itself: the guard's own frame and
                # __code__ reads are expected; anything else came from code it was made to run.
                if event not in _OWN_EVENTS and not event.startswith(("rcb.", "open", "import")):
                    state.flag(_REENTRANT_FLAGS.get(event, FLAG_TAMPERED))
                return
            state.busy.add(thread)
            try:
                state.on_event(event, args)
            except BaseException:
                state.flag(FLAG_ERROR)
            finally:
                state.busy.discard(thread)

        return hook

    def on_event(self, event, args):
        if event == "rcb.profile":
            self.on_profile(*args)
        elif event.startswith("rcb."):
            self.on_guard_event(event, args)
        elif event in _ALWAYS_EVENTS:
            self.flag(_ALWAYS_EVENTS[event])
        elif event in _ATTRIBUTED_EVENTS:
            if self.attributed(self.getframe(2)) == "cand":
                self.flag(_ATTRIBUTED_EVENTS[event])
        elif event in _DIRECT_EVENTS:
            caller = self.getframe(2)
            if caller is not None and self.kind(caller.f_code.co_filename) == "cand":
                self.flag(_DIRECT_EVENTS[event])
        elif event.startswith("ctypes."):
            if self.attributed(self.getframe(2)) == "cand":
                self.flag(FLAG_NATIVE)
        elif event == "open":
            self.on_open(args)
        elif event == "object.__setattr__" and len(args) > 1:
            if any(args[0] is guarded for guarded in self.guarded_objects()):
                self.flag(FLAG_TAMPERED)
            elif args[1] in _REBINDING_ATTRIBUTES and self.attributed(self.getframe(2)) == "cand":
                # A function's code or a value's class swapped in place: no binding changes.
                self.flag(FLAG_FORGED)

    def guarded_objects(self):
        return [self.trampoline] + [w for w, _code, _defaults in self.wrappers]

    def on_open(self, args):
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return
        if path.startswith("/proc/") and path.endswith(("/mem", "/maps", "/pagemap")):
            self.flag(FLAG_TAMPERED)
            return
        base = os.path.basename(path)
        if base.endswith("_ref.py") or (base.endswith(".pyc") and base.split(".", 1)[0].endswith("_ref")):
            full = os.path.realpath(os.path.join(self.prefix, path))
            if full.startswith(self.prefix) and self.innermost(self.getframe(2)) == "cand":
                self.flag(FLAG_REFERENCE)

    def on_guard_event(self, event, args):
        caller = self.getframe(3)
        code = caller.f_code if caller is not None else None
        if event == "rcb.flag":
            self.flag(str(args[0]))
        elif event in ("rcb.before", "rcb.after") and code in self.count_codes:
            self.on_count(event, args)
        elif event == "rcb.ending" and code in self.trusted:
            self.ending = tuple(args)
        elif event == "rcb.end" and code is self.end_code:
            self.finish()
        elif event == "rcb.thread":
            if self.innermost(caller) == "cand":
                self.flag(FLAG_THREAD)
        else:
            self.flag(FLAG_TAMPERED)

    def on_count(self, event, args):
        result = args[1]
        tally = _result_tally(result) if result is not None else (0,) * 6
        if event == "rcb.before":
            self.before = tally
            return
        before = getattr(self, "before", (0,) * 6)
        after = _result_tally(result if result is not None else args[2])
        delta = [max(new - old, 0) for old, new in zip(before, after)]
        for i, value in enumerate(delta):
            self.counts[i] += value
        if any(delta):
            self.send({"count": delta})
        self.verify()

    # -- integrity checks -------------------------------------------------------------

    def verify(self):
        """The driver's machinery and the profile function are still the ones installed."""
        for owner, name, original in self.watched:
            if _raw_attr(owner, name) is not original:
                self.flag("unittest_patched")
                break
        for function, code, defaults in self.wrappers:
            if function.__code__ is not code or function.__defaults__ is not defaults:
                self.flag(FLAG_TAMPERED)
        trampoline = self.trampoline
        if (self.getprofile() is not trampoline or trampoline.__code__ is not self.trampoline_code
                or trampoline.__defaults__ is not self.trampoline_defaults):
            self.flag(FLAG_TAMPERED)

    def end_function(self):
        def end(_audit=sys.audit):
            _audit("rcb.end")

        self.end_code = end.__code__
        return end

    def finish(self):
        self.verify()
        if self.depth != 0 or self.ending is None:
            # The end asked for while the test still ran (atexit._run_exitfuncs by the answer).
            self.flag(FLAG_TAMPERED)
        ending, exit_code, raised_in = self.ending or ("exception", None, None)
        keys = ("testsRun", "failures", "errors", "skipped", "expectedFailures", "unexpectedSuccesses")
        report = dict(zip(keys, self.counts))
        report.update(end=self.nonce, ending=ending, exitCode=exit_code, exitRaisedIn=raised_in,
                      flags=sorted(self.sent))
        self.send(report)
        # What runs after (finalizers at shutdown, modules torn down) is no part of the test.
        self.done = True

    # -- the profile: calls of the paper's code ---------------------------------------

    def on_profile(self, frame, event, arg):
        if event == "c_call":
            self.on_builtin_call(frame, arg)
            return
        kind = self.kind(frame.f_code.co_filename)
        if kind == "cand":
            if event == "call":
                self.depth += 1
                if self.depth == 1:
                    self.open_window(frame)
            elif event == "return" and self.depth > 0:
                self.depth -= 1
                if self.depth == 0:
                    self.close_window()
        elif kind == "ref":
            if event == "call":
                back = frame.f_back
                if back is None or self.kind(back.f_code.co_filename) != "ref":
                    self.check_reference(frame)
            elif event == "return" and frame.f_code.co_name == "<module>":
                self.ref_dicts.append(frame.f_globals)

    def check_reference(self, frame):
        """Reference code entered: fail when the candidate's code is its outermost caller of the paper."""
        outermost = None
        frame = frame.f_back
        while frame is not None:
            found = self.kind(frame.f_code.co_filename)
            if found in ("cand", "ref"):
                outermost = found
            frame = frame.f_back
        if outermost == "cand":
            self.flag(FLAG_REFERENCE)

    def position_of(self, frame):
        code = frame.f_code
        positions = self.positions.get(code)
        if positions is None:
            positions = self.positions[code] = tuple(code.co_positions())
        index = frame.f_lasti // 2
        return positions[index] if 0 <= index < len(positions) else None

    def site_of(self, frame):
        position = self.position_of(frame)
        return None if position is None else _site_at(self.sites, position)

    def open_window(self, frame):
        """The candidate's code starts running: was it called by a check, and what may it not change?"""
        caller = frame.f_back
        while caller is not None:
            found = self.kind(caller.f_code.co_filename)
            if found == "test":
                position = self.position_of(caller)
                if position is not None and _runs_inside_check(self.sites, position):
                    self.flag(FLAG_FORGED)
                break
            if found is not None:
                break
            caller = caller.f_back
        self.snapshot = self.take_snapshot()

    def close_window(self):
        for mapping, key, value in self.snapshot:
            # A name that appears (a lazily imported submodule) replaces nothing.
            if value is not _MISSING and mapping.get(key, _MISSING) is not value:
                self.flag(FLAG_FORGED)
                break
        self.snapshot = ()
        self.verify()

    def take_snapshot(self):
        entries = []
        # Only plain modules, dicts and str keys: nothing here may run code of the answer.
        main = self.module("__main__")
        if main is None:
            self.flag(FLAG_FORGED)
        mappings = [(d, None) for d in self.ref_dicts if type(d) is dict]
        if main is not None:
            mappings.append((main.__dict__, None))
        for name, keys in _WATCHED_MODULES:
            module = self.module(name)
            if module is not None:
                mappings.append((module.__dict__, keys))
        for name, cls_name, keys in _WATCHED_CLASSES:
            module = self.module(name)
            cls = module.__dict__.get(cls_name) if module is not None else None
            if isinstance(cls, type):
                mappings.append((_type_dict(cls), keys))
        for mapping, keys in mappings:
            for key in (tuple(mapping) if keys is None else keys):
                if type(key) is str:
                    entries.append((mapping, key, mapping.get(key, _MISSING)))
        return entries

    def module(self, name):
        module = self.modules.get(name)
        return module if type(module) is _ModuleType and type(module.__dict__) is dict else None

    def on_builtin_call(self, frame, function):
        """A builtin called by the test script: at a check, it must be the helper the test names."""
        site = self.site_of(frame)
        if site is None or not site[1]:
            return
        name = getattr(function, "__name__", None)
        if name is not None and name != site[2] and site[2] in _CHECK_NAMES:
            self.flag(FLAG_FORGED)


_MISSING = object()
_ModuleType = type(sys)
# A class's own namespace, read past any metaclass (torch.Tensor has one).
_type_dict = type.__dict__["__dict__"].__get__


def _make_trampoline(prefix, script):
    """The profile function: forwards calls of the paper's code (and builtins the test calls) to the hook.

    It holds nothing but its defaults (a tuple, replaced only through an audited
    assignment), so that no state of the guard can be reached through it.
    """

    def trampoline(frame, event, arg, _prefix=prefix, _script=script, _audit=sys.audit):
        if event == "c_call":
            if frame.f_code.co_filename == _script:
                _audit("rcb.profile", frame, event, arg)
        elif event == "call" or event == "return":
            if frame.f_code.co_filename.startswith(_prefix):
                _audit("rcb.profile", frame, event, arg)

    return trampoline


def _stdlib_files(*names):
    folder = os.path.dirname(os.path.abspath(os.__file__))
    return frozenset(os.path.join(folder, name) for name in names)


# The standard library's frame getters, through which a frame or object list is asked for
# as if directly (see _State.attributed).
_HELPER_FILES = _stdlib_files("inspect.py", "traceback.py", "logging/__init__.py", "linecache.py")


def _python_files(workspace):
    """Real paths of the paper's Python files, as the run found them."""
    found = set()
    for folder, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found.update(os.path.realpath(os.path.join(folder, f)) for f in files if f.endswith(".py"))
    return frozenset(found)


def _raw_attr(owner, name):
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
        return None
    return getattr(owner, name, None)


def _result_tally(result):
    def size(name):
        try:
            return len(getattr(result, name))
        except (AttributeError, TypeError):
            return 0

    tests_run = getattr(result, "testsRun", 0)
    return (
        tests_run if isinstance(tests_run, int) else 0,
        size("failures"), size("errors"), size("skipped"), size("expectedFailures"),
        size("unexpectedSuccesses"),
    )
