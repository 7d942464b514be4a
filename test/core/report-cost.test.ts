/**
 * The cost lines of every report format agree: per model and in total, model spend, the
 * estimated infrastructure cost and dollars per solved line, in the table, markdown, CSV,
 * JSON and HTML, at the largest size the tests use (32 models x 212 tasks). A local run says
 * local and adds $0; a cloud run is priced from what it recorded (its shards, their tests'
 * durations, a failed shard, its generator answers), through `rcb cloud results` both as
 * Aggregate stores the reports and as built from the table.
 */
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { aggregateRun } from '../../core/cloud/aggregate-run';
import { cloudKeys } from '../../core/cloud/payloads';
import { planShards, shardTasks } from '../../core/cloud/shard-plan';
import { buildReport } from '../../core/report/build-report';
import type { ReportFormat } from '../../core/report/format';
import { priceRecordedInfra, type RecordedCloudRun } from '../../core/cost/recorded-infra';
import { INFRA_PRICES } from '../../core/cost/infra-prices';
import { DEFAULT_STACK_SIZES } from '../../core/cost/infra-cost';
import { synthesizeSweep, SWEEP_MODELS, SWEEP_TASKS } from './report-synthetic';
import { MemoryBlobStore } from '../cloud/memory-blob-store';

jest.setTimeout(240_000);

interface CostFigures {
  modelUsd: number;
  infraUsd: number;
  totalUsd: number;
  solvedLines: number;
  /** NaN for n/a. */
  usdPerLine: number;
}
type ByModel = Record<string, CostFigures>;

const r4 = (x: number) => Math.round(x * 1e4) / 1e4;
const money = (s: string) => (/local/.test(s) ? 0 : s === 'n/a' || s === '' ? Number.NaN : Number(s.replace('$', '')));

function fromJson(text: string): { figures: ByModel; where: string; basis: string } {
  const cost = JSON.parse(text).cost;
  const figures: ByModel = {};
  for (const r of [...cost.models, cost.total])
    figures[r.model] = {
      modelUsd: r4(r.modelUsd),
      infraUsd: r4(r.infraUsd),
      totalUsd: r4(r.totalUsd),
      solvedLines: r.solvedLines,
      usdPerLine: r.usdPerSolvedLine === null ? Number.NaN : r4(r.usdPerSolvedLine),
    };
  return { figures, where: cost.where, basis: cost.basis };
}

const fromCells = (c: string[]): CostFigures => ({
  modelUsd: money(c[1]),
  infraUsd: money(c[2]),
  totalUsd: money(c[3]),
  solvedLines: Number(c[4]),
  usdPerLine: money(c[5]),
});

function fromTable(text: string): ByModel {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith('cost (model spend'));
  const figures: ByModel = {};
  for (const l of lines.slice(start + 3)) {
    if (l.startsWith('infrastructure: ')) break;
    const c = l.split(/\s{2,}/);
    figures[c[0]] = fromCells(c);
  }
  return figures;
}

function fromMarkdown(text: string): ByModel {
  const lines = text.split('\n');
  const start = lines.indexOf('### Cost');
  const figures: ByModel = {};
  for (const l of lines.slice(start + 4)) {
    if (!l.startsWith('| ')) break;
    const c = l
      .slice(2, -2)
      .split(' | ')
      .map((x) => x.trim());
    figures[c[0]] = fromCells(c);
  }
  return figures;
}

const csvRows = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => l.match(/("[^"]*"|[^,]*)(,|$)/g)!.map((c) => c.replace(/,$/, '')));

function fromCsv(text: string): ByModel {
  const [header, ...rows] = csvRows(text);
  const col = (r: string[], name: string) => r[header.indexOf(name)];
  const figures: ByModel = {};
  for (const r of rows) {
    if (col(r, 'paper') !== 'ALL') continue;
    figures[col(r, 'model')] = {
      modelUsd: Number(col(r, 'model_usd')),
      infraUsd: Number(col(r, 'infra_usd')),
      totalUsd: Number(col(r, 'total_usd')),
      solvedLines: Number(col(r, 'solved_lines')),
      usdPerLine: money(col(r, 'usd_per_solved_line')),
    };
    figures.ALL = { ...(figures.ALL ?? ({} as CostFigures)), totalUsd: Number(col(r, 'run_total_usd')), usdPerLine: money(col(r, 'run_usd_per_solved_line')) };
  }
  return figures;
}

function fromHtml(text: string): ByModel {
  const figures: ByModel = {};
  const costs = /<table id="costs"[\s\S]*?<\/table>/.exec(text)![0];
  const cells = (row: string): CostFigures => {
    const cell = (metric: string) => new RegExp(`data-metric="${metric}">(.*?)</td>`).exec(row)![1];
    return {
      modelUsd: money(cell('cost')),
      infraUsd: money(cell('infra')),
      totalUsd: money(cell('total-cost')),
      solvedLines: Number(cell('solved-lines')),
      usdPerLine: money(cell('usd-per-line')),
    };
  };
  for (const [, model, row] of costs.matchAll(/<tr data-model="([^"]+)">(.*?)<\/tr>/g)) figures[model] = cells(row);
  const run = /<tr class="run-cost"[^>]*>(.*?)<\/tr>/.exec(text)!;
  figures.ALL = cells(run[1]);
  return figures;
}

/** Every model's figures and the total, of every format, equal the JSON report's. */
function agree(
  what: string,
  got: ByModel,
  want: ByModel,
  keys: Array<keyof CostFigures> = ['modelUsd', 'infraUsd', 'totalUsd', 'solvedLines', 'usdPerLine'],
): number {
  let compared = 0;
  expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
  for (const [model, w] of Object.entries(want)) {
    for (const k of keys) {
      const g = got[model][k];
      if (g === undefined) continue;
      if (Number.isNaN(w[k])) expect([what, model, k, g]).toEqual([what, model, k, Number.NaN]);
      else expect([what, model, k, g]).toEqual([what, model, k, w[k]]);
      compared++;
    }
  }
  return compared;
}

/** The run in `store` as `rcb run` leaves it; logs at their cap are for the page's size (results-large), the cost does not read them. */
async function writeStore(store: SqliteRunStore, loaded: ReturnType<typeof synthesizeSweep>, unjudged: ReadonlySet<string> = new Set()): Promise<void> {
  const runId = loaded.run.runId;
  await store.createRun({ ...loaded.run, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T03:00:00.000Z' });
  await store.putTasks(runId, loaded.tasks);
  for (const t of loaded.tasks) {
    await store.putCompletion(loaded.completions.get(t.taskId)!);
    if (unjudged.has(t.taskId)) continue;
    const v = loaded.verdicts.get(t.taskId)!;
    await store.putVerdict(runId, { ...v, stdout: { text: '', totalBytes: 0, truncated: false }, stderr: { text: '', totalBytes: 0, truncated: false } });
  }
}

describe('cost lines of a 32-model x 212-task run agree in every format', () => {
  const loaded = synthesizeSweep();
  const runId = loaded.run.runId;
  const store = new SqliteRunStore(':memory:');
  const blobs = new MemoryBlobStore();
  const shards = planShards(loaded.tasks);
  const failedShard = shards[3];
  // The failed shard's tasks have no verdict (it failed every attempt): infra_error.
  const failedTasks = new Set(shardTasks(loaded.tasks, failedShard).map((t) => t.taskId));
  let compared = 0;

  beforeAll(async () => {
    await writeStore(store, loaded, failedTasks);
    await blobs.put(cloudKeys.shardManifest(runId), JSON.stringify(shards));
  });

  afterAll(async () => {
    await store.close();
    console.log(
      `report cost: ${SWEEP_MODELS} models x ${SWEEP_TASKS} tasks, ${shards.length} shards, ${compared} cost figures compared across table, markdown, csv, json and html`,
    );
  });

  const formats: ReportFormat[] = ['table', 'markdown', 'csv', 'html'];
  const parse = (format: ReportFormat, text: string): ByModel =>
    format === 'table' ? fromTable(text) : format === 'markdown' ? fromMarkdown(text) : format === 'csv' ? fromCsv(text) : fromHtml(text);

  it('a local run: infra says local ($0); total is model spend; $ per solved line = total / LoC of passing samples', async () => {
    // Every format rendered from the table here; the full size is the cloud case's (each report of it takes seconds).
    const loaded = synthesizeSweep(4, SWEEP_TASKS);
    const store = new SqliteRunStore(':memory:');
    await writeStore(store, loaded);
    const ref = fromJson((await buildReport(store, runId, { format: 'json', subset: 'all' })).text);
    expect(ref.where).toBe('local');
    expect(ref.basis).toMatch(/local run.*no cloud cost/);
    // Each model's solved lines are the LoC of its passing tasks, as the synthetic run made them.
    for (const model of loaded.run.spec.models.map((m) => m.id)) {
      const solved = loaded.tasks.filter((t) => t.model === model && loaded.verdicts.get(t.taskId)!.strictPass).reduce((s, t) => s + t.loc, 0);
      const spend = loaded.tasks.filter((t) => t.model === model).reduce((s, t) => s + loaded.completions.get(t.taskId)!.costUsd, 0);
      expect(ref.figures[model]).toEqual({ modelUsd: r4(spend), infraUsd: 0, totalUsd: r4(spend), solvedLines: solved, usdPerLine: r4(spend / solved) });
    }
    expect(ref.figures.ALL.totalUsd).toBeCloseTo(loaded.run.spentUsd, 4);
    for (const format of formats) {
      const { text } = await buildReport(store, runId, { format, subset: 'all' });
      if (format === 'csv') {
        // A CSV holds no prose: each model's ALL row says where its tests ran.
        const [header, ...rows] = csvRows(text);
        const all = rows.filter((r) => r[header.indexOf('paper')] === 'ALL');
        expect(all.map((r) => r[header.indexOf('infra_where')])).toEqual(loaded.run.spec.models.map(() => 'local'));
      } else expect(text).toMatch(/local run: tests ran on this machine/);
      compared += agree(`local ${format}`, parse(format, text), ref.figures);
    }
    await store.close();
  });

  it('a cloud run: priced from its recorded shards and answers, the same in every format, stored by Aggregate or built', async () => {
    // The shard failed every attempt: the evaluation Map Run's results name it, as in the cloud
    // (Aggregate writes the run's infra-errors.json from them, which the cost reads).
    await blobs.put(
      'maps/run/FAILED_0.json',
      JSON.stringify([{ Input: JSON.stringify({ runId, paper: failedShard.paper, shard: failedShard }), Error: 'States.TaskFailed' }]),
    );
    await blobs.put('maps/run/manifest.json', JSON.stringify({ ResultFiles: { FAILED: [{ Key: 'maps/run/FAILED_0.json' }] } }));
    // Aggregate stores every format (each report of this size takes seconds: the stored ones are compared).
    const result = await aggregateRun({ store, blobs }, runId, { mapResultsKey: 'maps/run/manifest.json' });
    expect(failedTasks.size).toBeGreaterThan(0);
    expect(result).toMatchObject({ status: 'succeeded_with_errors', infraErrorTasks: failedTasks.size });
    const stored = fromJson((await blobs.get(`${cloudKeys.reportPrefix(runId)}report.json`))!.toString('utf8'));
    expect(stored.where).toBe('cloud');
    expect(stored.basis).toContain(`${shards.length} recorded shard(s) (1 failed, billed on Spot and on demand)`);
    const infra = stored.figures.ALL.infraUsd;
    expect(infra).toBeGreaterThan(0);
    // The models' infra shares add up to the run's; each model's total is its spend and its share.
    const models = Object.entries(stored.figures).filter(([m]) => m !== 'ALL');
    expect(models).toHaveLength(SWEEP_MODELS);
    expect(models.reduce((s, [, f]) => s + f.infraUsd, 0)).toBeCloseTo(infra, 2);
    for (const [, f] of models) expect(f.totalUsd).toBeCloseTo(f.modelUsd + f.infraUsd, 3);
    for (const format of formats) {
      const text = (await blobs.get(
        `${cloudKeys.reportPrefix(runId)}${{ table: 'leaderboard.txt', markdown: 'report.md', csv: 'report.csv', html: 'report.html' }[format as string]}`,
      ))!.toString('utf8');
      compared += agree(`cloud stored ${format}`, parse(format, text), stored.figures);
    }
    // The HTML scatter plots total cost once a cloud run's infrastructure is known.
    const html = (await blobs.get(`${cloudKeys.reportPrefix(runId)}report.html`))!.toString('utf8');
    expect(html).toContain('scaled pass@1 against total cost (model spend and estimated infrastructure)');
    expect(html).not.toContain('rcb records no infrastructure cost');
  });
});

describe('priceRecordedInfra', () => {
  const base: RecordedCloudRun = {
    where: 'cloud',
    shards: [{ paper: 'p', tasksByModel: { a: 10 }, testSec: 600, envCheckRan: true }],
    generator: { a: { invocations: 10, sec: 300 } },
    tasksByModel: { a: 10 },
    wallSec: 3600,
  };
  const { vcpu, memoryGb } = DEFAULT_STACK_SIZES.shardTask;
  const spotHour = vcpu * INFRA_PRICES.fargate.spot.X86_64.vcpuHour + memoryGb * INFRA_PRICES.fargate.spot.X86_64.gbHour;
  const onDemandHour = vcpu * INFRA_PRICES.fargate.onDemand.X86_64.vcpuHour + memoryGb * INFRA_PRICES.fargate.onDemand.X86_64.gbHour;

  it('prices an unrecorded shard on Spot: pull + env check + tests over the slots', () => {
    const cost = priceRecordedInfra(base);
    const fargate = cost.lines.find((l) => l.item.startsWith('Fargate'))!;
    expect(fargate.usd).toBeCloseTo(((90 + 60 + 600 / 2) / 3600) * spotHour, 10);
    expect(cost.totalOnDemandUsd - cost.totalUsd).toBeCloseTo(((90 + 60 + 300) / 3600) * (onDemandHour - spotHour), 10);
    expect(cost.byModel.a).toBeCloseTo(cost.totalUsd, 10);
    expect(fargate.arithmetic).toContain('1 priced on Spot (capacity not recorded)');
  });

  it('uses a recorded wall time and capacity; bills a failed shard on Spot and on demand', () => {
    const recorded = priceRecordedInfra({ ...base, shards: [{ ...base.shards[0], wallSec: 1800, capacity: 'on-demand' }] });
    expect(recorded.lines[0].usd).toBeCloseTo((1800 / 3600) * onDemandHour, 10);
    const failed = priceRecordedInfra({ ...base, shards: [{ ...base.shards[0], wallSec: 1800, failed: true }] });
    expect(failed.lines[0].usd).toBeCloseTo((1800 / 3600) * (spotHour + onDemandHour), 10);
    // A shard shorter than a minute is billed the minute.
    expect(priceRecordedInfra({ ...base, shards: [{ ...base.shards[0], wallSec: 5 }] }).lines[0].usd).toBeCloseTo((60 / 3600) * spotHour, 10);
  });

  it('splits a shard of several models by their tasks, and a local run costs $0', () => {
    const cost = priceRecordedInfra({ ...base, shards: [{ ...base.shards[0], tasksByModel: { a: 3, b: 1 } }], tasksByModel: { a: 3, b: 1 } });
    expect(cost.byModel.a / cost.byModel.b).toBeCloseTo(3, 6);
    expect(priceRecordedInfra({ where: 'local' })).toMatchObject({ where: 'local', totalUsd: 0, lines: [] });
  });
});
