/**
 * The hostile completions (test/fixtures/replays/hostile.jsonl) through the cloud path:
 * `replay:FILE` uploaded with the run, answered by the deployed generator bundle, judged by
 * the shard container, as `rcb cloud run --emulate` runs them. Each is contained (the file
 * outside the workspace unchanged, no background process left), none passes the strict
 * judge, each carries its expected flag, and every verdict is the local run's (the one case
 * whose fixture allows two outcomes aside).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Verdict } from '../../core/records';
import { emulateCloudRun, type EmulatedRun } from '../../emulator/emulated-run';
import { cachedWorkflow } from '../../emulator/assembly-cache';
import { resolveRun } from '../../bin/commands/resolve-run';
import { rcb, tempDir } from '../helpers/cli';
import { strayProcesses as strays, writeHostileFixture } from '../security/support/hostile-fixture';

// This process's copy: its background sleeper is its own (test/security/support/hostile-fixture.ts).
const FIXTURE = writeHostileFixture(join(tempDir('rcb-hostile-fixture-'), 'hostile.jsonl'));
// Of this process: another suite on the machine creates and removes its own.
const SENTINEL_DIR = `/tmp/rcb-hostile-sentinel-cloud-${process.pid}`;
const SENTINEL = join(SENTINEL_DIR, 'secret.txt');
const SENTINEL_TEXT = 'rcb-sentinel-cloud-5d2e';
const cases = readFileSync(FIXTURE, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { snippet: string; sample: number; case: string; expected_flag: string });
const FLAGS = ['--model', `replay:${FIXTURE}`, '--papers', 'smoothfocal', '--samples', '15', '--timeout', '10'];

type Judgement = Pick<Verdict, 'officialPass' | 'strictPass' | 'failureClass' | 'flags'>;
const judgement = (v: Verdict): Judgement => ({
  officialPass: v.officialPass,
  strictPass: v.strictPass,
  failureClass: v.failureClass,
  flags: [...v.flags].sort(),
});

let local: Map<string, Judgement>;
let cloud: EmulatedRun;

beforeAll(async () => {
  rmSync(SENTINEL_DIR, { recursive: true, force: true });
  mkdirSync(SENTINEL_DIR, { recursive: true });
  writeFileSync(SENTINEL, SENTINEL_TEXT);
  // The local run of the same flags.
  const dir = tempDir('rcb-hostile-local-');
  const r = rcb(['run', ...FLAGS, '--python', '/usr/bin/python3', '--out', dir], { timeoutMs: 600_000 });
  expect([r.status, r.stderr.slice(-1000)]).toEqual([0, expect.any(String)]);
  const db = new Database(join(dir, 'rcb.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT task_id, record FROM verdicts').all() as { task_id: string; record: string }[];
  db.close();
  local = new Map(rows.map((row) => [row.task_id, judgement(JSON.parse(row.record) as Verdict)]));
  // The cloud run, as `rcb cloud run --emulate` starts it.
  const resolved = resolveRun({ model: FLAGS.slice(1, 2), papers: 'smoothfocal', samples: '15', timeout: '10', paper: true }, null);
  cloud = await emulateCloudRun(
    { pset: resolved.pset, templateText: resolved.template.text, spec: resolved.spec, models: resolved.models.info },
    // The assembly that command synthesizes, from emulator/assembly-cache.ts as it reads it.
    { python: '/usr/bin/python3', workflow: (await cachedWorkflow({ bundle: true })).workflow },
  );
}, 900_000);

afterAll(async () => {
  await cloud?.close();
  rmSync(SENTINEL_DIR, { recursive: true, force: true });
});

describe('hostile completions through rcb cloud run --emulate', () => {
  it('run to the end under the local run id', () => {
    expect([cloud.succeeded, cloud.error]).toEqual([true, undefined]);
    expect(local.size).toBe(cloud.lanes.sent);
  });

  it('are each contained, fail the strict judge with their flag, and get the local verdict', async () => {
    // Prepare
    const tasks = await cloud.store.listTasks(cloud.runId);
    const verdicts = new Map((await cloud.store.listVerdicts(cloud.runId)).map((v) => [v.taskId, v]));
    expect(verdicts.size).toBe(tasks.length);

    // Assess: every task as locally, but for a case whose fixture names two outcomes (the
    // memory bomb: MemoryError at the address-space limit, or the time limit first when the
    // machine is slow to hand out pages); the hostile ones flagged.
    const racy = new Set(cases.filter((c) => c.expected_flag.includes('|')).map((c) => `${c.snippet}#${c.sample}`));
    for (const t of tasks) {
      if (racy.has(`${t.snippet}#${t.sample}`)) continue;
      expect([t.snippet, t.sample, judgement(verdicts.get(t.taskId)!)]).toEqual([t.snippet, t.sample, local.get(t.taskId)]);
    }
    for (const c of cases) {
      const task = tasks.find((t) => t.snippet === c.snippet && t.sample === c.sample)!;
      const v = verdicts.get(task.taskId)!;
      expect([c.case, v.strictPass]).toEqual([c.case, false]);
      expect([c.case, c.expected_flag.split('|').some((f) => v.flags.includes(f))]).toEqual([c.case, true]);
    }
    expect(readFileSync(SENTINEL, 'utf8')).toBe(SENTINEL_TEXT);
    expect(strays()).toEqual([]);
  });
});
