/**
 * infra_error tasks (their cloud shard failed every attempt) are out of the score in every
 * output, counted and shown with their rate, as env_broken tasks are: a run as large as the
 * reports admit (32 models x 212 tasks x 5 samples over 20 papers, the sweep), with two
 * env_broken papers and three failed shards (one a part of its paper x model). Aggregate reads
 * the failed shards from the Map Run's results, as it does in the cloud, and stores the
 * reports; each is parsed and its figures compared with the JSON report's, and with the score
 * of the same run whose infra_error tasks were never planned. Judged by a restart, they count.
 */
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { aggregateRun, CLOUD_REPORTS, readInfraErrors } from '../../core/cloud/aggregate-run';
import { readRunResults } from '../../core/cloud/run-results';
import { describeRunStatus } from '../../core/cloud/run-status';
import { cloudKeys } from '../../core/cloud/payloads';
import { shardTasks } from '../../core/cloud/shard-plan';
import type { ShardRef } from '../../core/cloud/payloads';
import type { RunRecord, TaskRecord, Verdict } from '../../core/records';
import { scoreRun, scoreStoredRun } from '../../core/scoring';
import { makeRun, makeVerdict } from '../aws/records';
import { MemoryBlobStore } from '../cloud/memory-blob-store';
import { paperId, SWEEP_MODELS, SWEEP_PAPERS, SWEEP_TASKS } from './report-synthetic';

jest.setTimeout(600_000);

const r2 = (x: number) => Math.round(x * 100) / 100;
const numbers = (s: string) => (s.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);
const NO_EXECUTIONS = { status: async () => null, describe: async () => null };

interface Sweep {
  runId: string;
  models: string[];
  papers: string[];
  samples: number;
  broken: string[];
  /** The shards that failed every attempt: two whole (paper x model), one half of one. */
  failed: ShardRef[];
  tasks: TaskRecord[];
  runnable: TaskRecord[];
  infraIds: Set<string>;
  verdicts: Map<string, Verdict>;
  store: SqliteRunStore;
  blobs: MemoryBlobStore;
}

function verdictOf(t: TaskRecord, mi: number, ti: number): Verdict {
  const official = (ti + mi + t.sample) % 3 !== 1;
  const strict = official && (ti + t.sample) % 7 !== 0;
  return makeVerdict(t.taskId, { officialPass: official, strictPass: strict, failureClass: official ? null : 'functional', exitCode: official ? 0 : 1 });
}

const judge = (sweep: Sweep, t: TaskRecord): Verdict => verdictOf(t, sweep.models.indexOf(t.model), Number(t.snippet.split(' ')[1]));

/**
 * A run of `models` x `tasksPerModel` snippets x `samples` over 20 papers, two of them
 * env_broken, judged but for three failed shards, with the evaluation Map Run's results
 * (ResultWriter's manifest and FAILED file) naming those shards.
 */
async function writeSweep(runId: string, modelCount: number, tasksPerModel: number, samples: number, failedModels: [number, number, number]): Promise<Sweep> {
  const models = Array.from({ length: modelCount }, (_, i) => `provider/model-${String(i).padStart(2, '0')}`);
  const papers = Array.from({ length: SWEEP_PAPERS }, (_, i) => paperId(i));
  const broken = [papers[5], papers[11]];
  const failed: ShardRef[] = [
    { paper: papers[1], model: models[failedModels[0]] },
    { paper: papers[3], model: models[failedModels[1]] },
    { paper: papers[2], model: models[failedModels[2]], part: 0, parts: 2 },
  ];
  const tasks: TaskRecord[] = [];
  models.forEach((model, mi) => {
    for (let t = 0; t < tasksPerModel; t++) {
      for (let sample = 0; sample < samples; sample++) {
        const taskId = `${String(mi).padStart(2, '0')}${String(t).padStart(4, '0')}${sample}`.padEnd(32, '0');
        tasks.push({ taskId, paper: papers[t % papers.length], file: 'model.py', snippet: `snippet ${t}`, loc: 1 + (t % 40), model, sample });
      }
    }
  });
  // In memory: the test is about the reports, and 34k verdicts written to a file take seconds.
  const store = new SqliteRunStore(':memory:');
  const blobs = new MemoryBlobStore();
  const sweep: Sweep = {
    runId,
    models,
    papers,
    samples,
    broken,
    failed,
    tasks,
    runnable: tasks.filter((t) => !broken.includes(t.paper)),
    infraIds: new Set(failed.flatMap((s) => shardTasks(tasks, s).map((t) => t.taskId))),
    verdicts: new Map(),
    store,
    blobs,
  };
  const base = makeRun(runId);
  const run: RunRecord = {
    ...base,
    spec: { ...base.spec, models: models.map((id) => ({ id, params: {} })), samples, papers },
    papers: papers.map((id) => ({ id, annotated_file_paths: ['model.py'], context_file_paths: [], extra: {}, first_commit_date: '2025-01-10' })),
    models: Object.fromEntries(models.map((id) => [id, { config: {} }])),
    status: 'evaluating',
  };
  await store.createRun(run);
  await store.putTasks(runId, tasks);
  for (const t of sweep.runnable) {
    if (sweep.infraIds.has(t.taskId)) continue;
    const v = judge(sweep, t);
    sweep.verdicts.set(t.taskId, v);
    await store.putVerdict(runId, v);
  }
  await store.setRunEnvironment(runId, {
    python: '/usr/bin/python3',
    papers: papers.map((paper) => ({ paper, runs: !broken.includes(paper), reason: broken.includes(paper) ? 'missing module timm' : null })),
    checkedAt: '2026-12-01T08:00:00.000Z',
  });
  const failedChildren = failed.map((shard) => ({
    Input: JSON.stringify({ runId, paper: shard.paper, shard }),
    Error: 'ShardFailed',
    Cause: 'Spot and on-demand both gave up',
  }));
  await blobs.put('maps/run/FAILED_0.json', JSON.stringify(failedChildren));
  await blobs.put('maps/run/manifest.json', JSON.stringify({ ResultFiles: { FAILED: [{ Key: 'maps/run/FAILED_0.json' }] } }));
  return sweep;
}

describe('infra_error tasks in every report of a 32-model x 212-task x 5-sample sweep', () => {
  let sweep: Sweep;

  beforeAll(async () => {
    sweep = await writeSweep('sweepinfra000000', SWEEP_MODELS, SWEEP_TASKS, 5, [3, 10, 20]);
  });

  afterAll(async () => {
    await sweep?.store.close();
  });

  it('Aggregate ends the run succeeded_with_errors and every stored format agrees: infra_error out of the score, counted, with its rate', async () => {
    const { runId: RUN_ID, store, blobs, tasks, runnable, infraIds, verdicts, failed: FAILED, broken: BROKEN, samples: SAMPLES } = sweep;
    const MODELS = sweep.models;
    // Act
    const result = await aggregateRun({ store, blobs }, RUN_ID, { mapResultsKey: 'maps/run/manifest.json' });
    const stored = async (file: string) => (await blobs.get(cloudKeys.reportPrefix(RUN_ID) + file))!.toString('utf8');
    const [table, json, csv, markdown, html, official] = await Promise.all(
      ['leaderboard.txt', 'report.json', 'report.csv', 'report.md', 'report.html', 'overall_stats.json'].map(stored),
    );

    // Assess: the record, and the reference (JSON) against the run scored without those tasks at all.
    expect(result).toMatchObject({ status: 'succeeded_with_errors', infraErrorTasks: infraIds.size });
    expect(CLOUD_REPORTS.map((r) => r.file).sort()).toEqual(['leaderboard.txt', 'overall_stats.json', 'report.csv', 'report.html', 'report.json', 'report.md']);
    // Papers 1 and 3 have 11 snippets each (212 over 20 papers); half of paper 2's 55 task samples.
    expect(infraIds.size).toBe(2 * 11 * SAMPLES + 28);
    const run = (await store.getRun(RUN_ID))!;
    const ref = JSON.parse(json);
    expect(ref.infraError.taskSamples).toBe(infraIds.size);
    expect(ref.infraError.rate).toBeCloseTo((100 * infraIds.size) / runnable.length, 10);
    const infraGroups = new Set(tasks.filter((t) => infraIds.has(t.taskId)).map((t) => `${t.model}\0${t.paper}\0${t.snippet}`));
    const withoutThem = scoreRun({
      tasks: tasks.filter((t) => !infraGroups.has(`${t.model}\0${t.paper}\0${t.snippet}`)),
      verdicts,
      papers: run.papers,
      judge: 'strict',
      subset: 'all',
      cutoffs: {},
      environment: run.environment!.papers,
    });
    const affected = new Set(FAILED.map((s) => s.model!));
    for (const m of ref.models) {
      const want = withoutThem.models.find((x) => x.model === m.model)!;
      expect([m.scaled.mean, m.scaled.ci, m.pass1.mean, m.tasks, m.failures, m.pending]).toEqual([
        want.scaled.mean,
        want.scaled.ci,
        want.pass1.mean,
        want.tasks,
        want.failures,
        want.pending,
      ]);
      const own = tasks.filter((t) => t.model === m.model && infraIds.has(t.taskId)).length;
      expect(m.infraError).toBe(own);
      expect(affected.has(m.model)).toBe(own > 0);
      expect(m.infraErrorRate).toBeCloseTo((100 * own) / runnable.filter((t) => t.model === m.model).length, 10);
      expect(m.envBroken).toBe(tasks.filter((t) => t.model === m.model && BROKEN.includes(t.paper)).length);
      expect(m.pending).toBe(0); // infra_error is not "untested"
    }
    expect(ref.envBroken.map((p: { paper: string }) => p.paper)).toEqual([...BROKEN].sort((a, b) => a.localeCompare(b)));
    const want = new Map<string, { n: number; rate: number; scaled: number; tasks: number }>(
      ref.models.map((m: any) => [m.model, { n: m.infraError, rate: r2(m.infraErrorRate), scaled: r2(m.scaled.mean), tasks: m.tasks }]),
    );
    let compared = 0;
    const agree = (what: string, model: string, got: { n: number; rate: number; scaled: number; tasks: number }) => {
      compared++;
      expect([what, model, got]).toEqual([what, model, want.get(model)]);
    };

    // table: the infra_error (rate) column beside the counts, and the note with the run's rate.
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/samples\s+infra_error \(rate\)\s+failures by class/);
    for (const model of MODELS) {
      const row = lines.find((l) => l.startsWith(`${model} `))!;
      const [scaled, , , , , , , , tasksCell, , n, rate] = numbers(row.slice(model.length));
      agree('table', model, { n, rate, scaled, tasks: tasksCell });
    }
    const note = lines.find((l) => l.startsWith('note: infra_error:'))!;
    expect(numbers(note).slice(0, 2)).toEqual([infraIds.size, r2(ref.infraError.rate)]);

    // markdown: the same column.
    const mdLines = markdown.split('\n');
    const cells = (l: string) => l.split(' | ').map((c) => c.replace(/^\| ?|\s?\|$/g, '').trim());
    expect(cells(mdLines[0])[7]).toBe('infra_error (rate)');
    for (const model of MODELS) {
      const c = cells(mdLines.find((l) => l.startsWith(`| ${model} |`))!);
      const [n, rate] = numbers(c[7]);
      agree('markdown', model, { n, rate, scaled: numbers(c[1])[0], tasks: Number(c[5]) });
    }
    expect(markdown).toContain(`**note:** infra_error: ${infraIds.size} task sample(s)`);

    // csv: the ALL row of each model. Cells are quoted where they hold a comma (interval_method
    // does), so a row is split on the commas outside quotes, not on every comma.
    const csvCells = (l: string) => `${l},`.match(/("(?:[^"]|"")*"|[^,]*),/g)!.map((c) => c.slice(0, -1));
    const [header, ...rows] = csv.trim().split('\n').map(csvCells);
    expect(rows.every((r) => r.length === header.length)).toBe(true);
    const col = (r: string[], name: string) => r[header.indexOf(name)];
    for (const r of rows.filter((x) => col(x, 'paper') === 'ALL')) {
      agree('csv', col(r, 'model'), {
        n: Number(col(r, 'infra_error')),
        rate: Number(col(r, 'infra_error_rate')),
        scaled: Number(col(r, 'scaled_pass1_mean')),
        tasks: Number(col(r, 'tasks')),
      });
    }

    // html: the leaderboard's cell and the score's note.
    for (const [, model, row] of html.matchAll(/<tr class="model-row" data-model="([^"]+)">(.*?)<\/tr>/g)) {
      const cell = (metric: string) => new RegExp(`data-metric="${metric}"[^>]*>(.*?)</td>`).exec(row)![1];
      const [n, rate] = numbers(cell('infra-error'));
      agree('html', model, { n, rate, scaled: numbers(cell('scaled'))[0], tasks: Number(cell('tasks')) });
    }
    expect(html).toContain('<th class="num">infra_error (rate)</th>');
    expect(html).toMatch(/<li class="score-note">infra_error: \d+ task sample/);
    expect(compared).toBe(4 * MODELS.length);

    // overall_stats.json (official judge): the failed shards' snippets are not in its results,
    // every other snippet is, with all its samples; the note says why.
    const o = JSON.parse(official);
    // Its figures are the official judge's (as stored): each model's scaled rates and the samples listed.
    for (const m of ref.models) {
      const listed = Object.keys(o.results).flatMap((p) => Object.values((o.results[p].results[m.model]?.results ?? {}) as Record<string, unknown[]>).flat());
      const officialTasks = Object.keys(o.results).reduce((a, p) => a + Object.keys(o.results[p].results[m.model]?.results ?? {}).length, 0);
      expect(listed).toHaveLength(officialTasks * SAMPLES);
      expect(officialTasks).toBe(m.tasks); // no sample is untested: both judges keep the same tasks
    }
    for (const s of FAILED.slice(0, 2)) expect(o.results[s.paper].results[s.model!]?.results ?? {}).toEqual({});
    expect(o.rcb_notes.some((n: string) => n.startsWith(`infra_error: ${infraIds.size} task sample(s)`))).toBe(true);
    process.stderr.write(
      `infra_error reports: ${tasks.length} task samples (${MODELS.length} models x ${SWEEP_TASKS} tasks x ${SAMPLES} samples, ${BROKEN.length} env_broken papers, ${infraIds.size} infra_error in ${FAILED.length} shards), ${compared} model rows compared across 4 formats\n`,
    );
  });
});

describe('infra_error in rcb cloud status and results, and after a restart (4 models x 40 tasks x 3 samples)', () => {
  let sweep: Sweep;

  beforeAll(async () => {
    sweep = await writeSweep('smallinfra000000', 4, 40, 3, [0, 1, 2]);
    await aggregateRun({ store: sweep.store, blobs: sweep.blobs }, sweep.runId, { mapResultsKey: 'maps/run/manifest.json' });
  });

  afterAll(async () => {
    await sweep?.store.close();
  });

  it('rcb cloud results built from the table and rcb cloud status say the same', async () => {
    const { runId: RUN_ID, store, blobs, tasks, runnable, infraIds, verdicts, failed: FAILED } = sweep;
    const built = await readRunResults({ store, blobs }, RUN_ID, { format: 'json', judge: 'official', subset: 'all' });
    const officialRef = scoreStoredRun((await store.getRun(RUN_ID))!, tasks, verdicts, 'official', 'all', infraIds);
    const j = JSON.parse(built!.text);
    expect(j.infraError.taskSamples).toBe(infraIds.size);
    expect(j.models.map((m: any) => [m.model, m.scaled.mean, m.infraError])).toEqual(officialRef.models.map((m) => [m.model, m.scaled.mean, m.infraError]));

    const lines = (await describeRunStatus({ store, blobs, executions: NO_EXECUTIONS }, RUN_ID))!;
    const summary = lines.find((l) => l.startsWith('infra_error: ') && l.includes('infra error rate'))!;
    expect(numbers(summary).slice(0, 3)).toEqual([infraIds.size, runnable.length, r2((100 * infraIds.size) / runnable.length)]);
    expect(lines.filter((l) => l.startsWith('infra_error: shard '))).toHaveLength(FAILED.length);
    expect(lines).toContain(
      `infra_error: shard ${FAILED[2].paper} x ${FAILED[2].model} part 1/2: ${shardTasks(tasks, FAILED[2]).length} task(s), ShardFailed (Spot and on-demand both gave up)`,
    );
  });

  it('a restart that judges those tasks makes them count: a judged task is scored even while still listed', async () => {
    const { runId: RUN_ID, store, blobs, tasks, infraIds, verdicts, failed: FAILED } = sweep;
    // One failed shard judged by a new attempt: the stale record no longer keeps its tasks out.
    const judgedNow = shardTasks(tasks, FAILED[0]);
    for (const t of judgedNow) {
      const v = judge(sweep, t);
      verdicts.set(t.taskId, v);
      await store.putVerdict(RUN_ID, v);
    }
    const stale = scoreStoredRun((await store.getRun(RUN_ID))!, tasks, verdicts, 'strict', 'all', infraIds);
    expect(stale.models.find((m) => m.model === FAILED[0].model)!.infraError).toBe(0);
    expect(stale.infraError.taskSamples).toBe(infraIds.size - judgedNow.length);

    // All judged, and aggregated again (no shard failed this time): the run succeeds, scored in full.
    for (const t of tasks.filter((x) => infraIds.has(x.taskId) && !verdicts.has(x.taskId))) {
      const v = judge(sweep, t);
      verdicts.set(t.taskId, v);
      await store.putVerdict(RUN_ID, v);
    }
    await store.setRunStatus(RUN_ID, 'evaluating');
    const again = await aggregateRun({ store, blobs }, RUN_ID);
    expect(again).toEqual({ runId: RUN_ID, status: 'succeeded', reportPrefix: cloudKeys.reportPrefix(RUN_ID) });
    expect((await readInfraErrors(blobs, RUN_ID))!.shards).toEqual([]);
    const j = JSON.parse((await blobs.get(`${cloudKeys.reportPrefix(RUN_ID)}report.json`))!.toString('utf8'));
    expect(j.infraError).toEqual({ taskSamples: 0, rate: 0 });
    const full = scoreStoredRun((await store.getRun(RUN_ID))!, tasks, verdicts, 'strict', 'all');
    expect(j.models.map((m: any) => [m.model, m.tasks, m.scaled.mean])).toEqual(full.models.map((m) => [m.model, m.tasks, m.scaled.mean]));
    expect((await blobs.get(`${cloudKeys.reportPrefix(RUN_ID)}leaderboard.txt`))!.toString('utf8')).not.toContain('infra_error');
    const lines = (await describeRunStatus({ store, blobs, executions: NO_EXECUTIONS }, RUN_ID))!;
    expect(lines.some((l) => l.startsWith('infra_error'))).toBe(false);
  });
});
