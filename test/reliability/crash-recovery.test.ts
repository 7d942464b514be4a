/**
 * Crash safety of `rcb run`: the runner is killed with SIGKILL at a random point, half the
 * trials while generation is under way (once the model endpoint has received k calls,
 * k random), half during evaluation (once the store holds v verdicts, v random); the same
 * command is run again to the end, and the run must equal an uninterrupted one (official
 * pass, strict pass and failure class per task id) without any model call repeated.
 *
 * The model is a local Chat Completions endpoint (fake-chat-endpoint.ts) reached through a
 * `--models-file` entry of provider openai-compatible: a paid model as far as rcb knows, so
 * the run goes through the budget, the completion store and the cross-run cache. Each trial
 * has its own RCB_CACHE_DIR: a shared cache would hold the reference run's answers and the
 * trials would make no call at all, hiding any repeat.
 *
 * RCB_CRASH_TRIALS sets the number of trials (default 4; `npm run test:reliability` runs 10).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { PSET_MINI, REPO, tempDir } from '../helpers/cli';
import { FakeChatEndpoint, promptKey, type CallCounts } from './fake-chat-endpoint';
import { recordCount } from './reliability-summary';
import { startRcb } from './run-cli';
import { fakeModelsYaml } from '../helpers/fake-models-file';

const TRIALS = Number(process.env.RCB_CRASH_TRIALS || 4);
const SAMPLES = 2;
/** Model calls in flight at once: also the most answers a kill can lose between the endpoint and the store. */
const CONCURRENCY = 4;
const KEY_ENV = 'RCB_FAKE_CHAT_KEY';

// Deadlines of a hang, not bounds on speed: on a loaded machine a trial takes minutes.
jest.setTimeout(900_000);

interface StoreState {
  /** task id -> [prompt key, has a completion]. */
  tasks: Map<string, string>;
  completions: Set<string>;
  /** task id -> verdict record (JSON text). */
  verdicts: Map<string, string>;
}

function readStore(dir: string): StoreState {
  const db = new Database(join(dir, 'rcb.sqlite'), { readonly: true });
  try {
    const tasks = db.prepare('SELECT task_id, paper, file, snippet FROM tasks').all() as { task_id: string; paper: string; file: string; snippet: string }[];
    const completions = db.prepare('SELECT task_id FROM completions').all() as { task_id: string }[];
    const verdicts = db.prepare('SELECT task_id, record FROM verdicts').all() as { task_id: string; record: string }[];
    return {
      tasks: new Map(tasks.map((t) => [t.task_id, promptKey(t.paper, t.file, t.snippet)])),
      completions: new Set(completions.map((c) => c.task_id)),
      verdicts: new Map(verdicts.map((v) => [v.task_id, v.record])),
    };
  } finally {
    db.close();
  }
}

/** The verdict of each task as the comparison sees it. */
function outcomes(state: StoreState): Record<string, [boolean, boolean, string | null]> {
  const out: Record<string, [boolean, boolean, string | null]> = {};
  for (const [taskId, record] of [...state.verdicts].sort(([a], [b]) => a.localeCompare(b))) {
    const v = JSON.parse(record) as { officialPass: boolean; strictPass: boolean; failureClass: string | null };
    out[taskId] = [v.officialPass, v.strictPass, v.failureClass];
  }
  return out;
}

/** Completions stored, by prompt key. */
function storedByPrompt(state: StoreState): Map<string, number> {
  const out = new Map<string, number>();
  for (const id of state.completions) {
    const key = state.tasks.get(id)!;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

describe('rcb run killed with SIGKILL and run again', () => {
  const pset = loadPset(PSET_MINI);
  const template = loadTemplate(join(REPO, 'resources', 'prompt-template.txt'));
  const endpoint = new FakeChatEndpoint(pset, template, true);
  const promptKeys = pset.papers.flatMap((p) => p.snippets.map((s) => promptKey(p.meta.id, s.file, s.name)));
  const taskCount = promptKeys.length * SAMPLES;
  const work = tempDir('rcb-crash-');
  const modelsFile = join(work, 'models.yaml');
  let reference: Record<string, [boolean, boolean, string | null]> = {};
  /** Tasks whose verdict needs a test run (a completion with no code is judged without one). */
  let referenceTested = new Set<string>();
  let recovered = 0;

  const args = (out: string) => [
    'run',
    '--model',
    'fake',
    '--samples',
    String(SAMPLES),
    '--jobs',
    '2',
    '--concurrency',
    String(CONCURRENCY),
    '--budget',
    '100',
    '--models-file',
    modelsFile,
    '--out',
    out,
  ];
  const envFor = (cacheDir: string) => ({ [KEY_ENV]: 'fake-key', RCB_CACHE_DIR: cacheDir });

  beforeAll(async () => {
    await endpoint.start();
    writeFileSync(modelsFile, fakeModelsYaml(endpoint.url, KEY_ENV));
    // Prepare: the uninterrupted reference run; the endpoint answers each prompt once per sample.
    const out = join(work, 'reference');
    const r = await startRcb(args(out), { env: envFor(join(work, 'reference-cache')) }).done;
    const calls = endpoint.reset();
    expect([r.status, r.stderr.slice(-2000)]).toEqual([0, expect.any(String)]);
    expect(endpoint.unknownPrompts).toBe(0);
    expect(Object.fromEntries(calls.answered)).toEqual(Object.fromEntries(promptKeys.map((k) => [k, SAMPLES])));
    const state = readStore(out);
    reference = outcomes(state);
    referenceTested = new Set([...state.verdicts].filter(([, record]) => JSON.parse(record).executor !== 'none').map(([taskId]) => taskId));
    // On the Fargate-like host (fargate-like-host.test.ts) bubblewrap cannot start: every test ran in the uid sandbox.
    const sandboxes = new Set([...state.verdicts].filter(([id]) => referenceTested.has(id)).map(([, record]) => JSON.parse(record).sandbox));
    expect(sandboxes).toEqual(new Set([process.env.RCB_TEST_HOST === 'fargate-like' ? 'uid' : 'bwrap']));
    expect(Object.keys(reference)).toHaveLength(taskCount);
  }, 900_000);

  afterAll(async () => {
    await endpoint.close();
    recordCount('crash', `crash-trials-${process.env.RCB_TEST_HOST ?? 'local'}`, recovered, TRIALS);
  });

  const trials = Array.from({ length: TRIALS }, (_, i) => ({ trial: i + 1, phase: i % 2 === 0 ? 'generation' : 'evaluation' }));

  it.each(trials)('trial $trial: killed during $phase, resumed to the reference results with no model call repeated', async ({ trial, phase }) => {
    // Prepare
    const out = join(work, `trial-${trial}`);
    const cacheDir = join(work, `trial-${trial}-cache`);
    mkdirSync(cacheDir, { recursive: true });
    endpoint.reset();

    // Act: start the run and kill it at a random point of the phase.
    const running = startRcb(args(out), { env: envFor(cacheDir) });
    let killed = false;
    const kill = () => {
      if (killed) return;
      killed = true;
      running.child.kill('SIGKILL');
      endpoint.freeze();
    };
    let at: string;
    let poll: NodeJS.Timeout | undefined;
    if (phase === 'generation') {
      const k = 1 + Math.floor(Math.random() * (taskCount - 1));
      // A little after the k-th call arrives, so that kills also land while answers are being stored.
      const delayMs = Math.floor(Math.random() * 40);
      at = `call ${k} + ${delayMs} ms`;
      endpoint.onRequest = (n) => {
        if (n === k) setTimeout(kill, delayMs);
      };
    } else {
      // Not too near the end: verdicts without a test (no code) are stored a batch at a time,
      // and the kill must land before the run is over.
      const v = 1 + Math.floor(Math.random() * (taskCount - 12));
      at = `verdict ${v}`;
      poll = setInterval(() => {
        if (killed || !existsSync(join(out, 'rcb.sqlite'))) return;
        try {
          if (readStore(out).verdicts.size >= v) kill();
        } catch {
          // The store is being created: look again.
        }
      }, 20);
    }
    const first = await running.done;
    clearInterval(poll);
    const killedRun: CallCounts = endpoint.reset();
    const atKill = readStore(out);

    const second = await startRcb(args(out), { env: envFor(cacheDir) }).done;
    const rerun: CallCounts = endpoint.reset();
    const final = readStore(out);

    // Assess: the kill happened mid-run, and the run finished on the second go.
    const story = `trial ${trial} (${phase}, killed at ${at}): ${atKill.completions.size} completions and ${atKill.verdicts.size} verdicts survived`;
    process.stdout.write(`${story}\n`);
    expect([story, first.signal]).toEqual([story, 'SIGKILL']);
    expect([story, atKill.verdicts.size < taskCount]).toEqual([story, true]);
    expect([story, second.status, second.stderr.slice(-2000)]).toEqual([story, 0, expect.any(String)]);
    expect(endpoint.unknownPrompts).toBe(0);

    // Same results as the uninterrupted run, and verdicts from before the kill untouched.
    expect(outcomes(final)).toEqual(reference);
    for (const [taskId, record] of atKill.verdicts) expect(final.verdicts.get(taskId)).toBe(record);
    // No finished test was run again: the rerun ran exactly the tests of the tasks left without a verdict.
    const tested = Number(/(\d+) test\(s\) run/.exec(second.stdout)![1]);
    expect(tested).toBe([...referenceTested].filter((id) => !atKill.verdicts.has(id)).length);

    // No model call repeated. The endpoint cannot tell a prompt's samples apart (the request
    // is the same), so calls are counted per prompt against the completions stored for it.
    // An answer sent just before the kill may never have reached the store: that task was
    // not answered as far as the run can know, and is asked again; this is the one repeat a
    // SIGKILL can cause, so it is counted apart (at most one per call in flight) rather than
    // excused. A call the endpoint had received but not answered at the kill was never
    // answered, so asking it again repeats nothing. Everything else is exact:
    const stored = storedByPrompt(atKill);
    for (const key of promptKeys) {
      const storedBefore = stored.get(key) ?? 0;
      const answeredBefore = killedRun.answered.get(key) ?? 0;
      // - every stored completion was answered by the endpoint in the killed run (none came from elsewhere);
      expect([key, storedBefore <= answeredBefore]).toEqual([key, true]);
      // - the rerun asked exactly for the samples with no stored completion, each once, and never for a stored one.
      expect([key, rerun.received.get(key) ?? 0]).toEqual([key, SAMPLES - storedBefore]);
      expect([key, rerun.answered.get(key) ?? 0]).toEqual([key, SAMPLES - storedBefore]);
    }
    const lostInKill = sum(killedRun.answered) - atKill.completions.size;
    expect(lostInKill).toBeGreaterThanOrEqual(0);
    expect(lostInKill).toBeLessThanOrEqual(CONCURRENCY);
    process.stdout.write(
      `trial ${trial}: ${sum(killedRun.received)} call(s) before the kill (${sum(killedRun.answered)} answered), ${sum(rerun.received)} after; ${lostInKill} answer(s) lost in flight\n`,
    );
    recovered++;
  });
});
