"""rcb's in-sandbox test driver.

Runs a paper's test entry point exactly as ``python paper2code_test.py`` would (same
sys.argv, sys.path[0], __main__ module, tracebacks, exit status and output), and on top
of that:

* applies resource limits that the test cannot raise again;
* counts unittest results with its own wrapper around ``unittest.TestCase.run``;
* raises integrity flags: ``ref_import`` (the candidate file reached for a ``*_ref``
  module), ``unittest_patched`` (a key unittest/sys/os function was replaced) and
  ``exit_from_candidate`` (SystemExit was raised from the candidate file);
* hands the report to its guard (rcb_guard.py), which streams flags and counts to a file
  descriptor as they happen and signs the last line from an atexit hook, so that a run
  ended by ``os._exit`` or a signal leaves no report and the answer cannot write one.

Command line (cold executor)::

    python rcb_driver.py --report-fd N --candidate FILE \
        [--memory-mb M] [--max-processes P] [--max-file-mb F] paper2code_test.py

with the workspace as current directory. A warm pool imports this module and calls
``run_test`` in a forked child instead; see its docstring.

The driver imports only the standard library, and only before any test code runs.
"""

import sys

# Modules loaded by the interpreter before this driver imported anything: a script run
# by plain python finds these already loaded too, so they are never re-imported.
_STARTUP_MODULES = frozenset(sys.modules)

import atexit  # noqa: E402
import builtins  # noqa: E402
import importlib  # noqa: E402
import importlib.machinery  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import types  # noqa: E402
import unittest  # noqa: E402
import _thread  # noqa: E402
import threading  # noqa: E402

# The guard lies beside the driver; the interpreter may run it without the script's folder on sys.path (-P).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcb_guard  # noqa: E402

del sys.path[0]

# Submodules by name: the attribute unittest.main is the TestProgram class, not the module.
_ut_case = importlib.import_module("unittest.case")
_ut_loader = importlib.import_module("unittest.loader")
_ut_main = importlib.import_module("unittest.main")
_ut_result = importlib.import_module("unittest.result")
_ut_runner = importlib.import_module("unittest.runner")
_ut_suite = importlib.import_module("unittest.suite")

USAGE = (
    "usage: rcb_driver.py --report-fd N --candidate FILE [--memory-mb M] "
    "[--max-processes P] [--max-file-mb F] SCRIPT"
)

FLAG_REF_IMPORT = "ref_import"
FLAG_UNITTEST_PATCHED = "unittest_patched"
FLAG_EXIT_FROM_CANDIDATE = "exit_from_candidate"

# unittest leaves frames of modules carrying this global out of the tracebacks it prints,
# as it does for its own, so the counting wrapper never shows in a test's output.
__unittest = True

_DRIVER_FILE = os.path.abspath(__file__)
_IMPORTLIB_DIR = os.path.dirname(os.path.abspath(importlib.__file__)) + os.sep

# Real paths of absolute code file names that cannot change during a run, filled ahead by
# whoever imports this driver (a warm server, for the modules it preloaded on read-only
# mounts), so that each run need not resolve them again.
RESOLVED_PATHS = {}

_COUNT_KEYS = ("testsRun", "failures", "errors", "skipped", "expectedFailures",
               "unexpectedSuccesses")


class Limits:
    """Resource limits of the test process; None leaves a limit as inherited."""

    __slots__ = ("memory_mb", "max_processes", "max_file_mb")

    def __init__(self, memory_mb=None, max_processes=None, max_file_mb=None):
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.max_file_mb = max_file_mb


def apply_limits(limits):
    """Set rlimits with soft == hard, so that the test cannot raise them again."""
    wanted = [(resource.RLIMIT_CORE, 0)]
    if limits.memory_mb is not None:
        wanted.append((resource.RLIMIT_AS, limits.memory_mb * 1024 * 1024))
    if limits.max_processes is not None:
        wanted.append((resource.RLIMIT_NPROC, limits.max_processes))
    if limits.max_file_mb is not None:
        wanted.append((resource.RLIMIT_FSIZE, limits.max_file_mb * 1024 * 1024))
    for which, value in wanted:
        _soft, hard = resource.getrlimit(which)
        # An unprivileged process may lower its hard limit but never raise it.
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


class _Run:
    """State of one test run, read by the atexit hook that writes the report."""

    def __init__(self, workspace, candidate, report_fd):
        self.pid = os.getpid()
        self.workspace = workspace
        self.candidate = candidate
        self.report_fd = report_fd
        self.counts = dict.fromkeys(_COUNT_KEYS, 0)
        self.flags = set()
        self.ending = None
        self.exit_code = None
        self.exit_raised_in = None
        self.watched = []
        self._paths = {}

    # -- files ------------------------------------------------------------------------

    def relative(self, filename):
        """Workspace-relative path of a code file name, or None when outside the workspace."""
        try:
            return self._paths[filename]
        except KeyError:
            pass
        rel = None
        if isinstance(filename, str) and not filename.startswith("<"):
            full = RESOLVED_PATHS.get(filename)
            if full is None:
                full = os.path.realpath(os.path.join(self.workspace, filename))
            if full.startswith(self.workspace + os.sep):
                rel = full[len(self.workspace) + 1:]
        self._paths[filename] = rel
        return rel

    def is_candidate(self, filename):
        return self.relative(filename) == self.candidate

    def flag(self, name, _audit=sys.audit):
        """Raise an integrity flag: the guard writes it out at once (rcb_guard.py)."""
        self.flags.add(name)
        _audit("rcb.flag", name)

    # -- integrity watch --------------------------------------------------------------

    def check_watched(self):
        for owner, name, original in self.watched:
            if _raw_attr(owner, name) is not original:
                self.flag(FLAG_UNITTEST_PATCHED)
                return

def _raw_attr(owner, name):
    """The attribute as stored, without binding, so that identities are stable."""
    if isinstance(owner, type):
        for klass in owner.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
        return None
    return getattr(owner, name, None)


# Functions whose replacement lets a run look successful without its tests having run.
_WATCHED = [
    (unittest, ("TestCase", "TestResult", "TestSuite", "TextTestRunner", "TextTestResult",
                "TestProgram", "main", "TestLoader", "defaultTestLoader")),
    (_ut_case, ("TestCase",)),
    (_ut_result, ("TestResult",)),
    (_ut_suite, ("TestSuite", "BaseTestSuite")),
    (_ut_runner, ("TextTestRunner", "TextTestResult")),
    (_ut_main, ("TestProgram", "main")),
    (_ut_loader, ("TestLoader", "defaultTestLoader")),
    (_ut_case.TestCase, ("run", "__call__", "debug", "_callSetUp", "_callTestMethod",
                         "_callTearDown", "_callCleanup", "doCleanups")),
    (_ut_case._Outcome, ("testPartExecutor",)),
    (_ut_result.TestResult, ("addSuccess", "addFailure", "addError", "addSubTest", "addSkip",
                             "addExpectedFailure", "addUnexpectedSuccess", "wasSuccessful",
                             "startTest", "stopTest")),
    (_ut_runner.TextTestResult, ("addSuccess", "addFailure", "addError", "addSkip",
                                 "addExpectedFailure", "addUnexpectedSuccess")),
    (_ut_suite.BaseTestSuite, ("run", "__call__", "__iter__", "addTest", "addTests")),
    (_ut_suite.TestSuite, ("run",)),
    (_ut_runner.TextTestRunner, ("run",)),
    (_ut_main.TestProgram, ("__init__", "runTests", "parseArgs", "createTests")),
    (_ut_loader.TestLoader, ("loadTestsFromModule", "loadTestsFromTestCase", "loadTestsFromName",
                             "loadTestsFromNames", "getTestCaseNames")),
    (sys, ("exit", "audit", "setprofile", "getprofile")),
    (os, ("_exit",)),
]


def _result_tally(result):
    """Counters of a unittest result object, tolerant of unusual result classes."""

    def size(name):
        try:
            return len(getattr(result, name))
        except (AttributeError, TypeError):
            return 0

    tests_run = getattr(result, "testsRun", 0)
    return (
        tests_run if isinstance(tests_run, int) else 0,
        size("failures"),
        size("errors"),
        size("skipped"),
        size("expectedFailures"),
        size("unexpectedSuccesses"),
    )


def _install_test_counter(run):
    """Wrap TestCase.run so that the guard counts each test's outcome (rcb_guard.on_count).

    The original and sys.audit are bound as defaults: a tuple, replaced only through an
    audited assignment, where a closure cell could be swapped unseen.
    """
    original_run = _ut_case.TestCase.run

    def run_counted(self, result=None, _original=original_run, _audit=sys.audit):
        _audit("rcb.before", self, result)
        returned = _original(self, result)
        _audit("rcb.after", self, result, returned)
        return returned

    run_counted.__doc__ = original_run.__doc__
    run_counted.__name__ = original_run.__name__
    run_counted.__qualname__ = original_run.__qualname__
    _ut_case.TestCase.run = run_counted
    return run_counted


def _install_thread_watch():
    """Tell the guard when a thread starts: the profile of a raw _thread thread is its own."""
    original = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None, _original=original, _audit=sys.audit):
        _audit("rcb.thread")
        return _original(function, args) if kwargs is None else _original(function, args, kwargs)

    start_new_thread.__doc__ = original.__doc__
    _thread.start_new_thread = start_new_thread
    if hasattr(_thread, "start_new"):
        _thread.start_new = start_new_thread
    threading._start_new_thread = start_new_thread
    return start_new_thread


def _is_ref_name(name):
    return isinstance(name, str) and name.rpartition(".")[2].endswith("_ref")


def _fs_str(path):
    return os.fsdecode(path) if isinstance(path, bytes) else path


def _is_ref_path(path):
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        return False
    base = os.path.basename(path)
    if base.endswith("_ref.py"):
        return True
    # A cached build of a reference module: __pycache__/x_ref.cpython-311.pyc
    return base.endswith(".pyc") and base.split(".", 1)[0].endswith("_ref")


def _is_import_machinery(filename):
    return (
        filename.startswith("<frozen importlib")
        or filename.startswith(_IMPORTLIB_DIR)
        or filename == _DRIVER_FILE
    )


def _drop_own_frame(error):
    """Remove the current wrapper's entry from a traceback, so it reads as python's own.

    A bare ``raise`` afterwards re-raises without adding the frame back.
    """
    if error.__traceback__ is not None:
        error.__traceback__ = error.__traceback__.tb_next


def _install_ref_watch(run):
    """Flag the candidate file importing a ``*_ref`` module or opening a ``*_ref.py``."""

    def importer_is_candidate(frame):
        # The frame executing the import: the innermost one that is not import machinery.
        while frame is not None and _is_import_machinery(frame.f_code.co_filename):
            frame = frame.f_back
        return frame is not None and run.is_candidate(frame.f_code.co_filename)

    def opener_is_candidate(frame):
        # Whoever asked for the file last among workspace code (open, numpy, pathlib...).
        while frame is not None:
            if run.relative(frame.f_code.co_filename) is not None:
                return run.is_candidate(frame.f_code.co_filename)
            frame = frame.f_back
        return False

    def audit(event, args):
        if event != "import" and event != "open":
            return
        try:
            if event == "import":
                if _is_ref_name(args[0]) and importer_is_candidate(sys._getframe(1)):
                    run.flag(FLAG_REF_IMPORT)
            # Only the workspace's own *_ref files: a library's (pydantic's _forward_ref.py,
            # read while the candidate imports timm) is no reference of the pset.
            elif _is_ref_path(args[0]) and run.relative(_fs_str(args[0])) is not None and opener_is_candidate(sys._getframe(1)):
                run.flag(FLAG_REF_IMPORT)
        except Exception:
            # An audit hook that raises would break the operation it watches.
            pass

    # The audit event fires only when a module is loaded, not when an import statement
    # finds it already in sys.modules (say, after the test imported it first), so the
    # import statement and importlib.import_module are watched too.
    original_import = builtins.__import__
    original_import_module = importlib.import_module

    def watched_import(name, globals=None, locals=None, fromlist=(), level=0):
        try:
            module = original_import(name, globals, locals, fromlist, level)
        except BaseException as error:
            _drop_own_frame(error)
            raise
        try:
            if _is_ref_name(name) or any(
                isinstance(getattr(module, item, None), types.ModuleType)
                and _is_ref_name(getattr(module, item).__name__)
                for item in (fromlist or ())
                if isinstance(item, str)
            ):
                if run.is_candidate(sys._getframe(1).f_code.co_filename):
                    run.flag(FLAG_REF_IMPORT)
        except Exception:
            pass
        return module

    def watched_import_module(name, package=None):
        try:
            module = original_import_module(name, package)
        except BaseException as error:
            _drop_own_frame(error)
            raise
        if _is_ref_name(module.__name__) and importer_is_candidate(sys._getframe(1)):
            run.flag(FLAG_REF_IMPORT)
        return module

    watched_import.__doc__ = original_import.__doc__
    watched_import_module.__doc__ = original_import_module.__doc__
    builtins.__import__ = watched_import
    importlib.import_module = watched_import_module
    # Audit hooks cannot be removed once added.
    sys.addaudithook(audit)
    return [watched_import, watched_import_module]


def _workspace_top_level_names(workspace):
    names = set()
    for entry in os.listdir(workspace):
        path = os.path.join(workspace, entry)
        if entry.endswith(".py"):
            names.add(entry[:-3])
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            names.add(entry)
    return names


class Preloaded:
    """The modules a warm server loaded before forking, indexed once in the server.

    A forked child that walks ``sys.modules`` touches every module object (reference
    counts), and each touch copies a page the server shared with it: on ~1,900 modules
    that cost 60-80 ms per test. With this index a child reads only the names it needs.
    The server must not import anything once it is built (``still_current`` checks).
    """

    def __init__(self):
        self.names = frozenset(sys.modules)
        self.count = len(sys.modules)
        by_top = {}
        for name in self.names:
            if name not in _STARTUP_MODULES and name != "__main__":
                by_top.setdefault(name.partition(".")[0], []).append(name)
        self.by_top = {top: tuple(names) for top, names in by_top.items()}
        self._in_workspace = {}

    def still_current(self):
        return len(sys.modules) == self.count

    def in_workspace(self, workspace):
        """Preloaded modules whose file lies under ``workspace`` (a real path); normally none.

        Called in the server, once per workspace path, before the first fork for it.
        """
        found = self._in_workspace.get(workspace)
        if found is None:
            prefix = workspace + os.sep
            found = []
            for name, module in list(sys.modules.items()):
                origin = getattr(module, "__file__", None)
                if name in _STARTUP_MODULES or name == "__main__" or not isinstance(origin, str):
                    continue
                full = RESOLVED_PATHS.get(origin) or os.path.realpath(os.path.join(workspace, origin))
                if full.startswith(prefix):
                    found.append(name)
            found = self._in_workspace[workspace] = tuple(found)
        return found


# Set by a warm server in its forked child; None in a fresh interpreter.
PRELOADED = None
# The preloaded names this run dropped (shadowed by the workspace), for modules_added().
_DROPPED = set()


def modules_added():
    """Names the run added to ``sys.modules`` since the fork, oldest first.

    Read from the end of ``sys.modules`` (a dict keeps insertion order) up to the first
    preloaded name it still holds, so that the preloaded modules are not touched; when
    the counts show that a preloaded module was removed, every name is checked instead.
    """
    if PRELOADED is None:
        return [name for name in sys.modules if name not in _STARTUP_MODULES]
    kept = PRELOADED.names
    new = []
    for name in reversed(sys.modules):
        if name in kept and name not in _DROPPED:
            break
        new.append(name)
    dropped = sum(1 for name in _DROPPED if name in kept)
    if len(sys.modules) == PRELOADED.count - dropped + len(new):
        return new[::-1]
    return [name for name in sys.modules if name not in kept or name in _DROPPED]


def _forget_workspace_modules(run):
    """Make the paper's modules import fresh from the workspace.

    Drops modules loaded from the workspace and modules that this driver (or a warm
    pool's server) loaded under a name that a workspace file would shadow: plain python
    would have found the workspace file first.
    """
    shadowed = _workspace_top_level_names(run.workspace)
    if PRELOADED is not None:
        candidates = modules_added()  # loaded after the fork: checked one by one
        for top in shadowed:
            _DROPPED.update(PRELOADED.by_top.get(top, ()))
        _DROPPED.update(PRELOADED.in_workspace(run.workspace))
    else:
        candidates = list(sys.modules)
    for name in candidates:
        module = sys.modules.get(name)
        if name in _STARTUP_MODULES or name == "__main__" or module is None:
            continue
        origin = getattr(module, "__file__", None)
        if name.partition(".")[0] in shadowed or (origin and run.relative(origin)):
            _DROPPED.add(name)
    for name in _DROPPED:
        sys.modules.pop(name, None)
    for path in list(sys.path_importer_cache):
        if path == run.workspace or path.startswith(run.workspace + os.sep):
            del sys.path_importer_cache[path]
    importlib.invalidate_caches()


def _innermost_workspace_file(run, tb):
    found = None
    while tb is not None:
        rel = run.relative(tb.tb_frame.f_code.co_filename)
        if rel is not None:
            found = rel
        tb = tb.tb_next
    return found


def _run_script(run, script):
    """Run the script as __main__ the way the interpreter runs a file; return sys.exit's argument."""
    path = os.path.join(run.workspace, script)
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=path,
        __cached__=None,
        __package__=None,
        __spec__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __builtins__=builtins,
    )
    sys.modules["__main__"] = main
    try:
        with open(path, "rb") as source_file:
            source = source_file.read()
        code = compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        # Python reports a script that does not compile without a traceback.
        run.ending = "exception"
        error.__traceback__ = None
        sys.excepthook(type(error), error, None)
        return 1
    try:
        exec(code, main.__dict__)
    except SystemExit as exit_:
        run.ending = "exit"
        code_ = exit_.code
        if code_ is None or isinstance(code_, int):
            run.exit_code = None if code_ is None else int(code_)
        else:
            # Python prints any other exit value to stderr and exits 1.
            run.exit_code = 1
        run.exit_raised_in = _innermost_workspace_file(run, exit_.__traceback__)
        if run.exit_raised_in == run.candidate:
            run.flag(FLAG_EXIT_FROM_CANDIDATE)
        return code_
    except BaseException as error:
        run.ending = "exception"
        # Drop this function's frame so the traceback is the one python would print.
        _drop_own_frame(error)
        sys.excepthook(type(error), error, error.__traceback__)
        return 1
    run.ending = "return"
    return None


def run_test(workspace, candidate, report_fd, limits, script="paper2code_test.py"):
    """Run ``script`` in ``workspace`` in this process, as ``python script`` would.

    Meant to be called once per process: by ``main`` in a fresh interpreter, or by a warm
    pool in a freshly forked child. It clears atexit handlers inherited from the caller,
    registers the report hook first (so it runs last, after the test's own handlers),
    changes directory, applies ``limits`` and installs the watches, then runs the script.

    Returns the value to hand to ``sys.exit``: the caller must end the process with
    ``sys.exit(run_test(...))`` so that atexit hooks run and the report is written,
    with the same exit status and stderr text python would give.
    """
    workspace = os.path.realpath(workspace)
    run = _Run(workspace, os.path.normpath(candidate), report_fd)
    atexit._clear()
    os.set_inheritable(report_fd, False)
    os.chdir(workspace)
    apply_limits(limits)

    driver_dir = os.path.dirname(_DRIVER_FILE)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != driver_dir]
    sys.path.insert(0, workspace)
    sys.argv[:] = [script]
    _forget_workspace_modules(run)

    _preimport_libraries(workspace, script)
    wrappers = [_install_test_counter(run), _install_thread_watch()]
    wrappers += _install_ref_watch(run)
    run.watched = [
        (owner, name, _raw_attr(owner, name)) for owner, names in _WATCHED for name in names
    ]
    # Registered first, so it runs last, after the test's own handlers.
    atexit.register(rcb_guard.install(workspace, run.candidate, script, report_fd, run.watched,
                                      wrappers, (run_test.__code__,)))
    exit_arg = _run_script(run, script)
    run.check_watched()
    sys.audit("rcb.ending", run.ending or "exception", run.exit_code, run.exit_raised_in)
    return exit_arg


def _preimport_libraries(workspace, script):
    """Import the libraries the script imports at its top, before the guard's profile is on.

    Every call made while the profile runs costs a Python call: importing torch under it
    took 2 s more per test. A warm server preloads the same modules (warm-preload.ts), so
    this is what a warm run sees; a name the workspace provides, or that fails, is left to
    the script.
    """
    import ast

    try:
        with open(os.path.join(workspace, script), "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return
    local = _workspace_top_level_names(workspace)
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name.partition(".")[0] in local or name in sys.modules:
                continue
            try:
                importlib.import_module(name)
            except Exception:
                pass


def _parse_args(argv):
    options = {"--report-fd": None, "--candidate": None, "--memory-mb": None,
               "--max-processes": None, "--max-file-mb": None}
    script = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in options and i + 1 < len(argv):
            options[arg] = argv[i + 1]
            i += 2
        elif not arg.startswith("--") and script is None and i == len(argv) - 1:
            script = arg
            i += 1
        else:
            raise ValueError("unexpected argument %r" % arg)
    if script is None or options["--report-fd"] is None or options["--candidate"] is None:
        raise ValueError("missing argument")

    def number(name):
        value = options[name]
        return None if value is None else int(value)

    limits = Limits(number("--memory-mb"), number("--max-processes"), number("--max-file-mb"))
    return number("--report-fd"), options["--candidate"], limits, script


def main(argv):
    try:
        report_fd, candidate, limits, script = _parse_args(argv)
    except ValueError as error:
        print("rcb_driver: %s\n%s" % (error, USAGE), file=sys.stderr)
        return 2
    return run_test(os.getcwd(), candidate, report_fd, limits, script)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
