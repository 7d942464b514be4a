/**
 * One containment trial (see process-containment.test.ts): unrelated processes started
 * first, then hostile candidates that leave processes behind, through one executor; what
 * is left afterwards. Run in the test's own process, and as an unprivileged user from
 * contain-as-user.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { createLocalExecutor } from '../../../adapters/executor';
import { processUidBase, runningAsRoot } from '../../../adapters/executor/sandbox-users';
import { CORRECT_BODY, makeTinyPaper, modelSource, processesWith } from '../../fixtures/executor/tiny-paper';

const ROOT = runningAsRoot();
const MARK = `rcb-contain-${randomBytes(6).toString('hex')}`;

/** Python that execs a long sleep tagged with the marker (the processes the checks look for). */
const SLEEPER = `
import os, sys, time
MARK = ${JSON.stringify(MARK)}
def sleeper(tag, close_fds=False):
    if close_fds:
        os.closerange(0, 256)
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", MARK, tag])
def ready(pipe_r, what):
    os.read(pipe_r, 1)
    print("READY " + what, flush=True)
def left_behind(case, tag, new_session=False, close_fds=False):
    """A sleeper left through a double fork: an orphan, or a daemon in a session of its own."""
    r, w = os.pipe()
    if os.fork() == 0:
        if new_session:
            os.setsid()
        if os.fork() == 0:
            os.write(w, b"x")
            sleeper(tag, close_fds)
        os._exit(0)
    ready(r, case)
`;

const CASES: Record<string, string> = {
  orphan: `
left_behind("orphan", "orphan")
`,
  daemon: `
left_behind("daemon", "daemon", new_session=True, close_fds=True)
`,
  'process-group': `
r, w = os.pipe()
if os.fork() == 0:
    os.setpgid(0, 0)
    os.write(w, b"x")
    sleeper("pgid")
ready(r, "process-group")
`,
  'fork-bomb': `
import subprocess
bomb = "import os, time\\nwhile True:\\n    try:\\n        os.fork()\\n    except OSError:\\n        time.sleep(0.01)"
subprocess.Popen([sys.executable, "-c", bomb, MARK, "bomb"], start_new_session=True)
time.sleep(1)
print("READY fork-bomb", flush=True)
`,
  'overruns-with-daemon': `
left_behind("overruns-with-daemon", "overrun", new_session=True)
time.sleep(600)
`,
  ...(ROOT
    ? {
        // As root the tests run as slot users: -1 reaches only the slot's own uid, the parent
        // (a root supervisor, or the sandbox's own processes) is out of reach or takes the sandbox with it.
        'signals-everyone': `
left_behind("signals-everyone", "before-kill-all", new_session=True, close_fds=True)
try:
    os.kill(-1, 9)
except OSError as e:
    print("KILL-ALL " + type(e).__name__, flush=True)
`,
        'signals-parent': `
left_behind("signals-parent", "before-kill-parent", new_session=True, close_fds=True)
try:
    os.kill(os.getppid(), 9)
    print("PARENT-KILLED", flush=True)
except OSError as e:
    print("PARENT " + type(e).__name__, flush=True)
time.sleep(2)
`,
      }
    : {}),
};

/** Processes that have nothing to do with the runs: they must all outlive them. */
function startUnrelated(): Map<string, ChildProcess> {
  const started = new Map<string, ChildProcess>();
  const start = (name: string, options: { uid?: number; gid?: number; detached: boolean }) => {
    const child = spawn('sleep', ['900'], { stdio: 'ignore', ...options });
    child.on('error', () => undefined);
    started.set(name, child);
  };
  start('same user, own session', { detached: true });
  start('same user, the test runner’s process group', { detached: false });
  if (ROOT) {
    start('another user (nobody)', { uid: 65534, gid: 65534, detached: true });
    // A uid of the block of another (hypothetical) rcb process: never this process's slot, and,
    // above the kernel's pid_max, never the block of a live rcb process either (pid + 1 was one
    // when a neighbouring test file's rcb got that pid, and its cleanup rightly killed its own uid).
    const other = processUidBase(hypotheticalPid());
    start('a slot uid of another rcb process', { uid: other, gid: other, detached: true });
  }
  return started;
}

/** A pid no process of this machine can have (above pid_max) when the uid space allows, else this one's + 1. */
function hypotheticalPid(): number {
  const pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim());
  return Number.isInteger(pidMax) && pidMax + 1 < 1 << 22 ? pidMax + 1 : (process.pid % 4_000_000) + 1;
}

const alive = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

export interface TrialConfig {
  warm: boolean;
  unsafeNoSandbox: boolean;
}

export interface TrialOutcome {
  /** The cases, in order. */
  names: string[];
  /** Per case: its stdout, and why it was killed. */
  results: { name: string; stdout: string; stderr: string; killedFor: string | null }[];
  /** Per unrelated process: whether it was alive after the run. */
  unrelated: [string, boolean][];
  /** Pids of processes a candidate started that were still there after the run. */
  leftovers: number[];
}

export async function runContainmentTrial(config: TrialConfig): Promise<TrialOutcome> {
  const paper = makeTinyPaper();
  const unrelated = startUnrelated();
  try {
    // All of them up before any candidate runs, however slow the machine is to start them.
    await Promise.all([...unrelated.values()].map((child) => new Promise((resolve) => (child.once('spawn', resolve), child.once('error', resolve)))));
    const names = Object.keys(CASES);
    const candidates = names.map((name) => paper.candidate(name, modelSource(CORRECT_BODY, SLEEPER + CASES[name])));
    const executor = await createLocalExecutor({
      ...config,
      // Without slot users the slots share the user's process limit, which the fork bomb fills.
      jobs: ROOT ? 2 : 1,
      preload: config.warm ? ['json'] : undefined,
      // Without slot users RLIMIT_NPROC counts every task of the user (node's threads too).
      limits: { timeoutSec: 5, maxProcesses: ROOT ? 32 : 1024 },
      warn: () => undefined,
    });
    let raw;
    try {
      raw = await executor.run(candidates);
    } finally {
      await executor.close();
    }
    return {
      names,
      results: raw.map((r) => ({ name: r.taskId, stdout: r.stdout.text, stderr: r.stderr.text + (r.infraError ?? ''), killedFor: r.killedFor })),
      unrelated: [...unrelated].map(([name, child]) => [name, alive(child)]),
      leftovers: processesWith(MARK),
    };
  } finally {
    for (const child of unrelated.values()) if (alive(child) && child.pid) process.kill(child.pid, 'SIGKILL');
    rmSync(paper.root, { recursive: true, force: true });
  }
}
