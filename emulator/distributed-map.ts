/**
 * The evaluation Distributed Map, executed. aws-local-stepfunctions validates a Distributed
 * Map's fields (ItemReader, ResultWriter, ToleratedFailure*) but does not run them, so the
 * emulator replaces each DISTRIBUTED Map state by a Task state of the same name, input,
 * ResultPath, Catch and Next, bound to `runDistributedMap`, which does what Step Functions'
 * Map Run does:
 *
 * - ItemReader (`s3:getObject`, InputType JSON): the array at the resolved Bucket/Key, read
 *   from the emulator's bucket;
 * - ItemSelector: each item's input, from the Map's input (`$.x`), the item (`$$.Map.Item.Value`,
 *   `$$.Map.Item.Index`) and the parent execution (`$$.Execution.Name`);
 * - ItemProcessor: each item its own child execution of aws-local-stepfunctions (its own
 *   history, Retry and Catch), at most MaxConcurrency at once;
 * - ToleratedFailurePercentage / ToleratedFailureCount: past them the Map fails with
 *   States.ExceedToleratedFailureThreshold, as AWS does; under them it succeeds;
 * - ResultWriter (`s3:putObject`): `<Prefix>/<mapRunId>/manifest.json` and SUCCEEDED_0.json /
 *   FAILED_0.json in AWS's shape, and `{ MapRunArn, ResultWriterDetails }` as the state's result.
 *
 * What it does not reproduce is listed in docs/cloud.md (the quotas, child execution start
 * rate, Map Run redrive, item batching).
 */
import type { BlobStore } from '../core/store';

type State = Record<string, unknown>;
type States = Record<string, State>;

/** Error of a Map Run whose failed children pass its tolerated failure threshold (Step Functions' name). */
export const EXCEED_TOLERATED_FAILURE = 'States.ExceedToleratedFailureThreshold';

export class DistributedMapError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

/** Timeout of the Task standing for a Map Run: 20 days (a timer of the runtime holds at most 24.8). */
const MAP_TASK_TIMEOUT_SEC = 20 * 86_400;

/** Whether a state is a Map in DISTRIBUTED mode. */
export function isDistributedMap(state: State): boolean {
  return state.Type === 'Map' && (state.ItemProcessor as { ProcessorConfig?: { Mode?: string } } | undefined)?.ProcessorConfig?.Mode === 'DISTRIBUTED';
}

/**
 * The definition with each Distributed Map replaced by a Task state bound by name (at the top
 * level and in Parallel branches, where the progress loop runs its waves), and those Maps by name.
 */
export function withDistributedMapsAsTasks(states: States, maps: Map<string, State> = new Map()): { states: States; maps: Map<string, State> } {
  const out: States = {};
  for (const [name, state] of Object.entries(states)) {
    if (state.Type === 'Parallel' && Array.isArray(state.Branches)) {
      const branches = (state.Branches as Array<{ States: States }>).map((b) => ({ ...b, States: withDistributedMapsAsTasks(b.States, maps).states }));
      out[name] = { ...state, Branches: branches };
      continue;
    }
    if (!isDistributedMap(state)) {
      out[name] = state;
      continue;
    }
    maps.set(name, state);
    const { Type: _t, ItemProcessor: _p, ItemReader: _r, ItemSelector: _s, ResultWriter: _w, MaxConcurrency: _m, Label: _l, ...rest } = state;
    const { ToleratedFailurePercentage: _tp, ToleratedFailureCount: _tc, ItemBatcher: _b, ItemsPath: _ip, ResultSelector: _rs, ...kept } = rest;
    // A Map state has no timeout of its own; aws-local-stepfunctions gives a Task 60 s unless told.
    out[name] = { ...kept, Type: 'Task', Resource: `arn:aws:states:::emulator:distributedMap/${name}`, TimeoutSeconds: MAP_TASK_TIMEOUT_SEC };
  }
  return { states: out, maps };
}

/** Reads a JSONPath of the simple forms the workflow uses: `$`, `$.a.b`. */
function readPath(root: unknown, path: string, what: string): unknown {
  if (path === '$') return root;
  if (!path.startsWith('$.')) throw new Error(`emulator: ${what}: unsupported path ${path}`);
  let v: unknown = root;
  for (const part of path.slice(2).split('.')) {
    if (v === null || typeof v !== 'object' || !(part in (v as object)))
      throw new DistributedMapError('States.Runtime', `${what}: ${path} is not in the input`);
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

interface MapContext {
  input: unknown;
  item: unknown;
  index: number;
  executionName: string;
}

function resolve(template: unknown, ctx: MapContext, what: string): unknown {
  if (Array.isArray(template)) return template.map((t) => resolve(t, ctx, what));
  if (template === null || typeof template !== 'object') return template;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(template as Record<string, unknown>)) {
    if (!key.endsWith('.$')) {
      out[key] = resolve(value, ctx, `${what}.${key}`);
      continue;
    }
    const path = String(value);
    const field = `${what}.${key}`;
    let v: unknown;
    if (path === '$$.Map.Item.Value') v = ctx.item;
    else if (path.startsWith('$$.Map.Item.Value.')) v = readPath(ctx.item, `$${path.slice('$$.Map.Item.Value'.length)}`, field);
    else if (path === '$$.Map.Item.Index') v = ctx.index;
    else if (path === '$$.Execution.Name') v = ctx.executionName;
    else if (path.startsWith('$$')) throw new Error(`emulator: ${field}: unsupported context path ${path}`);
    else v = readPath(ctx.input, path, field);
    out[key.slice(0, -2)] = v;
  }
  return out;
}

/** One child execution's record as ResultWriter writes it. */
interface ChildRecord {
  ExecutionArn: string;
  Name: string;
  Input: string;
  Status: 'SUCCEEDED' | 'FAILED';
  Output?: string;
  Error?: string;
  Cause?: string;
}

export interface DistributedMapRun {
  /** Items read, children succeeded and failed. */
  items: number;
  succeeded: number;
  failed: number;
  /** Most children running at once (bounded by MaxConcurrency). */
  peakConcurrency: number;
  /** The items read (the wave's shards), in order. */
  values: unknown[];
}

export interface RunDistributedMapOptions {
  name: string;
  map: State;
  input: unknown;
  executionName: string;
  blobs: BlobStore;
  /** Runs one child execution of the ItemProcessor with this input; rejects with the child's error. */
  runChild(processor: { StartAt: string; States: States }, input: unknown, childName: string): Promise<unknown>;
  /** Told of each Map Run's counts. */
  onRun?: (run: DistributedMapRun) => void;
}

/** Map Runs started by this process: each wave's Map Run has its own id, as AWS gives each one. */
let mapRunSeq = 0;

/** One Map Run: read, select, run children, tolerate, write. Resolves with the state's result. */
export async function runDistributedMap(opts: RunDistributedMapOptions): Promise<unknown> {
  const { map, input, name } = opts;
  const reader = map.ItemReader as { Resource?: string; ReaderConfig?: { InputType?: string }; Parameters?: Record<string, unknown> } | undefined;
  if (!reader || reader.Resource !== 'arn:aws:states:::s3:getObject' || reader.ReaderConfig?.InputType !== 'JSON') {
    throw new Error(`emulator: ${name}: only an ItemReader of s3:getObject with InputType JSON is emulated`);
  }
  const location = resolve(
    reader.Parameters ?? {},
    { input, item: undefined, index: 0, executionName: opts.executionName },
    `${name}.ItemReader.Parameters`,
  ) as {
    Bucket: string;
    Key: string;
  };
  const raw = await opts.blobs.get(location.Key);
  if (!raw) throw new DistributedMapError('States.ItemReaderFailed', `${name}: no object ${location.Key} in the bucket`);
  const items = JSON.parse(raw.toString('utf8')) as unknown;
  if (!Array.isArray(items)) throw new DistributedMapError('States.ItemReaderFailed', `${name}: ${location.Key} is not a JSON array`);

  // A child execution's definition: the processor without its ProcessorConfig (a Map-only field).
  const { ProcessorConfig: _config, ...processor } = map.ItemProcessor as { StartAt: string; States: States; ProcessorConfig?: unknown };
  const selector = map.ItemSelector as Record<string, unknown> | undefined;
  const maxConcurrency = Number(map.MaxConcurrency ?? 0) || items.length || 1;
  const mapRunId = `${opts.executionName}-${name}-${(mapRunSeq++).toString(36)}-${Date.now().toString(36)}`;
  const mapRunArn = `arn:aws:states:us-east-1:000000000000:mapRun:emulated/${mapRunId}`;
  const records: ChildRecord[] = new Array(items.length);
  let next = 0;
  let running = 0;
  let peak = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      const childInput = selector
        ? resolve(selector, { input, item: items[index], index, executionName: opts.executionName }, `${name}.ItemSelector`)
        : items[index];
      const childName = `${mapRunId}:${index}`;
      const base = {
        ExecutionArn: `arn:aws:states:us-east-1:000000000000:execution:emulated/${childName}`,
        Name: childName,
        Input: JSON.stringify(childInput),
      };
      running++;
      peak = Math.max(peak, running);
      try {
        const output = await opts.runChild(processor, childInput, childName);
        records[index] = { ...base, Status: 'SUCCEEDED', Output: JSON.stringify(output ?? null) };
      } catch (err) {
        const e = err as Error & { cause?: { name?: string; message?: string } };
        records[index] = { ...base, Status: 'FAILED', Error: e.cause?.name ?? e.name, Cause: e.cause?.message ?? e.message };
      } finally {
        running--;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(maxConcurrency, Math.max(1, items.length)) }, worker));

  const failed = records.filter((r) => r.Status === 'FAILED');
  const succeeded = records.filter((r) => r.Status === 'SUCCEEDED');
  opts.onRun?.({ items: items.length, succeeded: succeeded.length, failed: failed.length, peakConcurrency: peak, values: items });

  const writer = map.ResultWriter as { Resource?: string; Parameters?: { Bucket?: string; Prefix?: string } } | undefined;
  let details: { Bucket: string; Key: string } | undefined;
  if (writer) {
    if (writer.Resource !== 'arn:aws:states:::s3:putObject') throw new Error(`emulator: ${name}: only a ResultWriter of s3:putObject is emulated`);
    const prefix = `${writer.Parameters?.Prefix ?? ''}${writer.Parameters?.Prefix ? '/' : ''}${mapRunId}`;
    const files: Record<'SUCCEEDED' | 'FAILED' | 'PENDING', Array<{ Key: string; Size: number }>> = { SUCCEEDED: [], FAILED: [], PENDING: [] };
    for (const [status, list] of [
      ['SUCCEEDED', succeeded],
      ['FAILED', failed],
    ] as const) {
      if (!list.length) continue;
      const key = `${prefix}/${status}_0.json`;
      const body = JSON.stringify(list);
      await opts.blobs.put(key, body, 'application/json');
      files[status].push({ Key: key, Size: Buffer.byteLength(body) });
    }
    const manifestKey = `${prefix}/manifest.json`;
    await opts.blobs.put(
      manifestKey,
      JSON.stringify({ DestinationBucket: writer.Parameters?.Bucket, MapRunArn: mapRunArn, ResultFiles: files }),
      'application/json',
    );
    details = { Bucket: String(writer.Parameters?.Bucket ?? ''), Key: manifestKey };
  }

  // Past the threshold the Map state fails (its Catch applies); at or under it, it succeeds.
  const pct = map.ToleratedFailurePercentage as number | undefined;
  const count = map.ToleratedFailureCount as number | undefined;
  const overPct = pct !== undefined && items.length > 0 && (100 * failed.length) / items.length > pct;
  const overCount = count !== undefined && failed.length > count;
  // Either threshold passed fails it; with neither set, one failed child does.
  if (failed.length && ((pct === undefined && count === undefined) || overPct || overCount)) {
    throw new DistributedMapError(
      EXCEED_TOLERATED_FAILURE,
      `${name}: ${failed.length} of ${items.length} child execution(s) failed, over the tolerated threshold`,
    );
  }
  return { MapRunArn: mapRunArn, ...(details ? { ResultWriterDetails: details } : {}) };
}
