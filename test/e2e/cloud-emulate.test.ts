/**
 * The cloud flow on this machine (`rcb cloud run --emulate`) against a local run of the same
 * flags: the synthesized state machine on aws-local-stepfunctions, the functions' handlers,
 * dynalite and s3rver, the container started from the image's /app as the Dockerfile lays it out. Same run id, same
 * verdicts, same leaderboard; and the same again when every SQS message arrives twice and a
 * shard container dies once, and when both copies of every message are handled at once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Verdict } from '../../core/records';
import type { ModelClient } from '../../core/model';
import type { Pset } from '../../core/types';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { packageRoot, resourcePath } from '../../core/util/package-root';
import { buildReport } from '../../core/report/build-report';
import { cloudKeys } from '../../core/cloud/payloads';
import { EmptyModel, OracleModel } from '../../adapters/models/offline';
import { emulateCloudRun, type EmulatedRun, type EmulatorOptions } from '../../emulator/emulated-run';
import type { SynthesizedWorkflow } from '../../emulator/workflow-definition';
import { cachedWorkflow } from '../../emulator/assembly-cache';
import { rcb, PSET_MINI, tempDir } from '../helpers/cli';
import { startRcb } from '../reliability/run-cli';
import { counting } from '../cloud/cloud-fixture';
import { expectCloudBoardLikeLocal, splitCsvCost } from '../helpers/cost-lines';

interface Reference {
  dir: string;
  runId: string;
  verdicts: Map<string, Pick<Verdict, 'officialPass' | 'strictPass' | 'failureClass'>>;
  json: Record<string, unknown>;
}

function judgement(v: Verdict): Pick<Verdict, 'officialPass' | 'strictPass' | 'failureClass'> {
  return { officialPass: v.officialPass, strictPass: v.strictPass, failureClass: v.failureClass };
}

/** Scores of a JSON report, per judge (the report's run metadata aside). */
function scores(text: string): unknown {
  return (JSON.parse(text) as { models: unknown }).models;
}

let reference: Reference;
/**
 * The stack synthesized for the file's in-process emulated runs: both take the same
 * definition, as `emulateCloudRun` would synthesize it for each. It is the assembly the CLI
 * runs use too (with bundles, from emulator/assembly-cache.ts), so the file synthesizes once.
 */
let workflow: SynthesizedWorkflow;
/** The emulated cloud's state folder of the CLI tests. */
const stateDir = tempDir('rcb-emulate-state-');

/** A client that answers `ms` later, so that a copy handled at the same time finds its call in flight. */
function slow(client: ModelClient, ms: number): ModelClient {
  return {
    id: client.id,
    params: client.params,
    offline: client.offline,
    complete: async (req) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return client.complete(req);
    },
  };
}

/** The emulated cloud run of the reference's flags (models oracle and empty, every paper). */
function emulateReference(pset: Pset, clients: { oracle: ModelClient; empty: ModelClient }, options: EmulatorOptions): Promise<EmulatedRun> {
  const templatePath = resourcePath('prompt-template.txt');
  const template = loadTemplate(templatePath);
  return emulateCloudRun(
    {
      pset,
      templateText: readFileSync(templatePath, 'utf8'),
      spec: {
        psetDigest: pset.digest,
        psetRoot: pset.root,
        models: [clients.oracle, clients.empty].map((c) => ({ id: c.id, params: c.params })),
        samples: 1,
        withPaper: true,
        papers: null,
        promptTemplateDigest: template.digest,
        timeoutSec: 60,
        budgetUsd: null,
      },
      models: { oracle: { config: { name: 'oracle', offline: true } }, empty: { config: { name: 'empty', offline: true } } },
    },
    {
      python: '/usr/bin/python3',
      // In-process handlers: the test hands in clients that count (and slow) the model calls.
      functions: 'source',
      workflow,
      ...options,
      clients: new Map([
        ['oracle', clients.oracle],
        ['empty', clients.empty],
      ]),
    },
  );
}

beforeAll(async () => {
  // The local run of the same flags: the reference the cloud flow must reproduce. Its own
  // process runs while this one synthesizes the stack.
  const dir = tempDir('rcb-emulate-ref-');
  const local = startRcb(['run', '--model', 'oracle', '--model', 'empty', '--out', dir]).done;
  workflow = (await cachedWorkflow({ bundle: true })).workflow;
  const r = await local;
  expect([r.status, r.stderr.slice(-1500)]).toEqual([0, expect.any(String)]);
  const runId = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')).runId as string;
  const db = new Database(join(dir, 'rcb.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT task_id, record FROM verdicts').all() as { task_id: string; record: string }[];
  db.close();
  const judges = ['strict', 'official'];
  const reports = await Promise.all(judges.map((judge) => startRcb(['report', dir, '--format', 'json', '--judge', judge]).done));
  const json: Record<string, unknown> = {};
  judges.forEach((judge, i) => {
    expect([judge, reports[i].status]).toEqual([judge, 0]);
    json[judge] = scores(reports[i].stdout);
  });
  reference = { dir, runId, verdicts: new Map(rows.map((row) => [row.task_id, judgement(JSON.parse(row.record) as Verdict)])), json };
}, 900_000);

describe('rcb cloud run --emulate', () => {
  it('prints the leaderboard of the local run, under the same run id, and writes the same reports', () => {
    // Prepare
    const out = tempDir('rcb-emulate-out-');

    // Act
    const r = rcb(['cloud', 'run', '--emulate', '--state-dir', stateDir, '--model', 'oracle', '--model', 'empty', '--out', out]);

    // Assess
    expect(r.stderr).toContain(`run ${reference.runId} (emulated)`);
    expect(r.status).toBe(0);
    expect(r.stdout.startsWith('\n')).toBe(true);
    expectCloudBoardLikeLocal(r.stdout.slice(1), readFileSync(join(reference.dir, 'leaderboard.txt'), 'utf8'));
    // SQS delivers at least once: a message may come again (a generator that stopped at its
    // deadline hands it back), and the task's claim makes the second delivery change nothing.
    const summary = /run succeeded \(emulated\) in [\d.]+s: 56 message\(s\) sent, (\d+) delivered, 8 container run\(s\) \(0 failed\)/.exec(r.stderr);
    expect(summary).not.toBeNull();
    expect(Number(summary![1])).toBeGreaterThanOrEqual(56);
    expect(JSON.parse(readFileSync(join(out, 'overall_stats.json'), 'utf8'))).toEqual(
      JSON.parse(readFileSync(join(reference.dir, 'overall_stats.json'), 'utf8')),
    );
  });

  it("keeps the run in its state folder: status and results read it there after the command ended, through the cloud's adapters", () => {
    // Act
    const status = rcb(['cloud', 'status', reference.runId, '--emulate', '--state-dir', stateDir]);
    const json = rcb(['cloud', 'results', reference.runId, '--emulate', '--state-dir', stateDir, '--format', 'json']);
    const official = rcb(['cloud', 'results', reference.runId, '--emulate', '--state-dir', stateDir, '--format', 'json', '--judge', 'official']);
    const csv = rcb(['cloud', 'results', reference.runId, '--emulate', '--state-dir', stateDir, '--format', 'csv']);

    // Assess
    expect([status.status, status.stderr]).toEqual([0, expect.any(String)]);
    const [head, execution, progress, ...rest] = status.stdout.split('\n');
    expect([head, progress, rest]).toEqual([`run ${reference.runId}`, 'progress: succeeded: 56/56 answered, 56/56 judged', ['']]);
    expect(execution).toMatch(/^execution: SUCCEEDED \(started \S+Z, stopped \S+Z\)$/);
    expect(json.status).toBe(0);
    expect(scores(json.stdout)).toEqual(reference.json.strict);
    // Computed from the table (no stored report has this judge), as rcb cloud results does for a deployed stack.
    expect(official.status).toBe(0);
    expect(scores(official.stdout)).toEqual(reference.json.official);
    // The same scores; the cloud's infrastructure is estimated from its shards, the local run's is local.
    const localCsv = splitCsvCost(rcb(['report', reference.dir, '--format', 'csv']).stdout);
    const cloudCsv = splitCsvCost(csv.stdout);
    expect(cloudCsv.scores).toBe(localCsv.scores);
    expect(localCsv.cost).toContain(',local,');
    expect(cloudCsv.cost).toContain(',cloud,');
  });

  it('answers a second rcb cloud run of the same flags from the state folder: the execution had succeeded, nothing runs again', () => {
    const r = rcb(['cloud', 'run', '--emulate', '--state-dir', stateDir, '--model', 'oracle', '--model', 'empty']);

    expect(r.status).toBe(0);
    expect(r.stderr).toContain(
      `run ${reference.runId} succeeded before (execution ${reference.runId}) and has no failed task to ask again; its stored results:`,
    );
    expect(r.stderr).toContain('0 message(s) sent, 0 delivered, 0 container run(s)');
    expect(r.stdout.startsWith('\n')).toBe(true);
    expectCloudBoardLikeLocal(r.stdout.slice(1), readFileSync(join(reference.dir, 'leaderboard.txt'), 'utf8'));
  });

  it('says where emulated runs are kept when the state folder holds none', () => {
    const empty = tempDir('rcb-emulate-state-');
    const r = rcb(['cloud', 'status', reference.runId, '--emulate', '--state-dir', empty]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`no emulated runs in ${empty}: \`rcb cloud run --emulate\` keeps its runs there`);
  });

  describe('with every SQS message delivered twice and the first shard container failing once', () => {
    let run: EmulatedRun;
    const pset = loadPset(PSET_MINI);
    const oracle = counting(new OracleModel(pset));
    const empty = counting(new EmptyModel());

    beforeAll(async () => {
      run = await emulateReference(pset, { oracle, empty }, { deliverTwice: true, failFirstShardOnce: true });
    }, 900_000);
    afterAll(async () => {
      await run?.close();
    });

    it('succeeds under the local run id after the state machine retried the failed shard', () => {
      expect(run.error).toBeUndefined();
      expect(run.runId).toBe(reference.runId);
      const failed = run.shardRuns.filter((s) => s.code !== 0);
      expect(failed).toHaveLength(1);
      expect(failed[0].injected).toBe(true);
      // Four papers x two models, one shard run twice; the retry of the failed shard succeeded.
      expect(run.shardRuns).toHaveLength(9);
      expect(
        run.shardRuns
          .filter((s) => s.paper === failed[0].paper)
          .map((s) => s.code !== 0)
          .sort(),
      ).toEqual([false, false, true]);
    });

    it("started every shard container in the image's /app as the Dockerfile lays it out, which holds no path into the checkout", () => {
      const app = run.containerApp;
      expect(run.shardRuns.map((s) => [s.cwd, s.command])).toEqual(
        run.shardRuns.map(() => [app, ['--enable-source-maps', join(app, 'dist', 'container', 'entry.js')]]),
      );
      const checkout = packageRoot();
      expect(app.startsWith(`${checkout}/`)).toBe(false);
      expect(readdirSync(app).sort()).toEqual(['dist', 'examples', 'package.json', 'resources']);
      // No link out, no package folder, no source: the bundle and the files the image copies.
      const files: string[] = [];
      const walk = (dir: string): void => {
        for (const entry of readdirSync(dir, { withFileTypes: true })) {
          const path = join(dir, entry.name);
          expect({ path, link: entry.isSymbolicLink() }).toEqual({ path, link: false });
          if (entry.isDirectory()) walk(path);
          else files.push(path);
        }
      };
      walk(app);
      expect(files.filter((f) => f.includes('node_modules') || (f.endsWith('.ts') && !f.includes('/examples/')))).toEqual([]);
      expect(files.filter((f) => readFileSync(f, 'latin1').includes(checkout))).toEqual([]);
      expect(files).toEqual(expect.arrayContaining([join(app, 'dist', 'python', 'rcb_driver.py'), join(app, 'dist', 'python', 'rcb_warm_server.py')]));
    });

    it('delivered every message twice but called each model once per task', () => {
      expect(run.lanes.sent).toBe(56);
      expect(run.lanes.delivered).toBe(112);
      expect(run.lanes.deadLettered).toEqual([]);
      expect(oracle.calls).toBe(28);
      expect(empty.calls).toBe(28);
    });

    it("holds one verdict per task, each the local run's", async () => {
      const verdicts = await run.store.listVerdicts(run.runId);
      expect(verdicts).toHaveLength(56);
      expect(new Set(verdicts.map((v) => v.taskId)).size).toBe(56);
      expect(new Map(verdicts.map((v) => [v.taskId, judgement(v)]))).toEqual(reference.verdicts);
    });

    it('scores like the local run under both judges, and Aggregate stored the reports', async () => {
      for (const judge of ['strict', 'official'] as const) {
        const { text } = await buildReport(run.store, run.runId, { format: 'json', judge, subset: 'all' });
        expect([judge, scores(text)]).toEqual([judge, reference.json[judge]]);
      }
      const board = await run.blobs.get(`${cloudKeys.reportPrefix(run.runId)}leaderboard.txt`);
      expectCloudBoardLikeLocal(board?.toString('utf8') ?? '', readFileSync(join(reference.dir, 'leaderboard.txt'), 'utf8'));
      expect((await run.store.getRun(run.runId))?.status).toBe('succeeded');
    });
  });

  describe('with both copies of every SQS message handled at once (two generator instances)', () => {
    let run: EmulatedRun;
    const pset = loadPset(PSET_MINI);
    const oracle = counting(new OracleModel(pset));
    const empty = counting(new EmptyModel());

    beforeAll(async () => {
      // Calls that take a moment, so that each task's second copy arrives while its first is calling.
      run = await emulateReference(pset, { oracle: slow(oracle, 5), empty: slow(empty, 5) }, { deliverTwice: 'overlapping' });
    }, 900_000);
    afterAll(async () => {
      await run?.close();
    });

    it('calls each model once per task: the copy that found the call in flight went back to the queue and then did nothing', () => {
      expect(run.error).toBeUndefined();
      expect(oracle.calls).toBe(28);
      expect(empty.calls).toBe(28);
      expect(run.lanes.sent).toBe(56);
      expect(run.lanes.failedRecords).toBeGreaterThan(0);
      expect(run.lanes.delivered).toBe(112 + run.lanes.failedRecords);
      expect(run.lanes.deadLettered).toEqual([]);
    });

    it("holds one verdict per task, each the local run's", async () => {
      const verdicts = await run.store.listVerdicts(run.runId);
      expect(new Map(verdicts.map((v) => [v.taskId, judgement(v)]))).toEqual(reference.verdicts);
      expect((await run.store.getRun(run.runId))?.status).toBe('succeeded');
    });
  });
});
