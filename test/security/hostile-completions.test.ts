/**
 * Hostile completions (test/fixtures/replays/hostile.jsonl) run through each local
 * executor (cold: a fresh interpreter per test; warm: a forked child of a pre-imported
 * interpreter) as a run would: each must be contained (nothing outside changed, no secret seen, no
 * connection made, no process left behind), fail the strict judge with its named flag,
 * and not stop the others.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { loadPset } from '../../core/pset/read-pset';
import { extractCompletion } from '../../core/prompt/extract';
import { findSnippet } from '../../core/prompt/mask';
import { candidateFor } from '../../core/run/evaluate';
import { judge } from '../../core/judge';
import type { Candidate, RawExecution } from '../../core/executor';
import { createLocalExecutor } from '../../adapters/executor';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { PSET_MINI } from '../helpers/cli';
import { hostileFixtureText, SENTINEL_DIR, strayProcesses } from './support/hostile-fixture';
import { recordCount } from '../reliability/reliability-summary';

interface HostileCase {
  paper: string;
  snippet: string;
  sample: number;
  completion: string;
  case: string;
  expected_flag: string;
}

const SENTINEL = join(SENTINEL_DIR, 'secret.txt');
const SENTINEL_TEXT = 'rcb-sentinel-4f1c9a';
const FAKE_SECRETS = { FAKE_API_KEY: 'sk-fake-0b7e41d2', AWS_SECRET_ACCESS_KEY: 'fake-aws-secret-93a1', OPENAI_API_KEY: 'sk-fake-openai-77c2' };
/** The port the network case connects to in the fixture; pointed at this test's own listener. */
const FIXTURE_PORT = '47611';

// This process's copy: its background sleeper is its own (support/hostile-fixture.ts).
const cases: HostileCase[] = hostileFixtureText()
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));

/**
 * Both executors, with the same checks (each jest worker process has sandbox uids of its
 * own), in bubblewrap and, as root, in the uid sandbox (no namespaces: the host's network
 * and file system, a slot uid, seccomp).
 */
const EXECUTORS = [
  { kind: 'cold', warm: false, sandbox: 'bwrap' },
  { kind: 'warm', warm: true, sandbox: 'bwrap' },
  ...(runningAsRoot()
    ? ([
        { kind: 'cold, uid sandbox,', warm: false, sandbox: 'uid' },
        { kind: 'warm, uid sandbox,', warm: true, sandbox: 'uid' },
      ] as const)
    : []),
] as const;

describe.each(EXECUTORS)('hostile completions through the $kind executor', ({ kind, warm, sandbox }) => {
  let server: Server;
  let connections = 0;
  const saved: Record<string, string | undefined> = {};
  let results: RawExecution[] = [];
  const candidates: Candidate[] = [];
  /** Cases that passed the check below, for the reliability summary. */
  let contained = 0;

  beforeAll(async () => {
    // Prepare: secrets in the parent's environment, a file outside the workspace, a listener on loopback.
    for (const [k, v] of Object.entries(FAKE_SECRETS)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    rmSync(SENTINEL_DIR, { recursive: true, force: true });
    // Private, as a user's secrets are: the uid sandbox reads what any user may read.
    mkdirSync(SENTINEL_DIR, { recursive: true, mode: 0o700 });
    writeFileSync(SENTINEL, SENTINEL_TEXT, { mode: 0o600 });
    server = createServer((s) => {
      connections++;
      s.destroy();
    });
    // A free port, not the fixture's: another suite on this machine may hold that one.
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = String((server.address() as AddressInfo).port);

    const pset = loadPset(PSET_MINI, { papers: ['smoothfocal'] });
    const paper = pset.papers[0];
    for (const c of cases) {
      const snippet = findSnippet(paper, c.snippet);
      candidates.push(candidateFor(c.case, paper, snippet, extractCompletion(c.completion.replaceAll(FIXTURE_PORT, port))));
    }
    const executor = await createLocalExecutor({
      warm,
      sandbox,
      jobs: 2,
      limits: { timeoutSec: 5, memoryMb: 2048, maxProcesses: 64, maxOutputBytes: 8 * 1024 * 1024, logCapBytes: 16 * 1024 },
    });
    try {
      // Act
      results = await executor.run(candidates);
    } finally {
      await executor.close();
    }
  }, 180_000);

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(SENTINEL_DIR, { recursive: true, force: true });
  });

  it('returns a result for every case: none stops the run', () => {
    expect(results.map((r) => r.taskId)).toEqual(cases.map((c) => c.case));
    expect(results.filter((r) => r.infraError)).toEqual([]);
    expect(new Set(results.map((r) => r.sandbox))).toEqual(new Set([sandbox]));
  });

  /** `a|b`: either flag names the case (a memory bomb may raise MemoryError or be killed, depending on timing). */
  const named = (flags: string[], expected: string) => expected.split('|').some((f) => flags.includes(f));

  it.each(cases.map((c) => [c.case, c.expected_flag]))('%s fails the strict judge with flag %s', (name, flag) => {
    const i = cases.findIndex((c) => c.case === name);
    const v = judge(results[i], { completion: extractCompletion(cases[i].completion), testUsesUnittest: true });
    expect(v.strictPass).toBe(false);
    expect([name, named(v.flags, flag)]).toEqual([name, true]);
    contained++;
  });

  it('lets no secret from the parent environment reach a test', () => {
    for (const r of results) {
      for (const secret of Object.values(FAKE_SECRETS)) {
        expect(r.stdout.text).not.toContain(secret);
        expect(r.stderr.text).not.toContain(secret);
      }
    }
  });

  it('keeps files outside the workspace unread and unchanged', () => {
    for (const r of results) expect(r.stdout.text + r.stderr.text).not.toContain(SENTINEL_TEXT);
    expect(readFileSync(SENTINEL, 'utf8')).toBe(SENTINEL_TEXT);
    expect(existsSync(join(SENTINEL_DIR, 'pwned.txt'))).toBe(false);
    expect(existsSync('/root/rcb-pwned.txt')).toBe(false);
    expect(existsSync('/usr/rcb-pwned.txt')).toBe(false);
  });

  it('never leaves the paper folder of the pset changed', () => {
    expect(readFileSync(join(PSET_MINI, 'smoothfocal', 'paper2code_test.py'), 'utf8')).not.toContain('# edited');
  });

  it('makes no connection to the host loopback', () => {
    expect(connections).toBe(0);
    for (const r of results) expect(r.stdout.text).not.toContain('CONNECTED-LOOPBACK');
  });

  it('leaves no process behind', () => {
    expect(strayProcesses()).toEqual([]);
  });

  afterAll(() => {
    process.stdout.write(`hostile cases contained (${kind} executor): ${contained}/${cases.length}\n`);
    recordCount('hostile', `hostile-${kind}`, contained, cases.length);
  });
});
