/**
 * `rcb cloud doctor [--sweep FILE | run flags]`: reads the deployed stack (its template) and
 * the account's quotas, and says whether the run or sweep fits: peak Lambda concurrency,
 * Fargate vCPU on Spot and on demand, state transitions, the models' rate limits; then what
 * the run's infrastructure and the idle stack cost. Exit 1 names the quota to raise.
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import { SNSClient } from '@aws-sdk/client-sns';
import { checkStackHealth } from '../../../adapters/aws/stack-health';
import { checkFit, formatFit, type RunDemand } from '../../../adapters/aws/quotas-fit';
import { readAccountQuotas, readDeployedStack, type QuotaClients } from '../../../adapters/aws/quotas';
import { laneOfProvider } from '../../../adapters/models/provider-lanes';
import type { ModelEntry } from '../../../adapters/models/registry';
import { hostedModels } from '../../../app/models';
import { DEFAULT_INFRA_ASSUMPTIONS, estimateRunInfra, formatIdle, formatRunInfra, idleMonthlyCost } from '../../../core/cost/infra-cost';
import { plannedShardCount } from '../../../core/cloud/shard-plan';
import type { Pset } from '../../../core/types';
import { UsageError } from '../common';
import { resolveRun, type RunSpecFlags } from '../resolve-run';
import { loadSweep } from '../sweep-commands';
import type { StackFlags } from './stack-flags';

export type DoctorOptions = StackFlags & Omit<RunSpecFlags, 'timeout'> & { sweep?: string; modelsFile?: string; callSec?: string };

export interface DoctorDeps extends QuotaClients {
  cfn: CloudFormationClient;
  /** The alarm topic's subscriptions (stack checks: adapters/aws/stack-health.ts). @default no stack checks */
  sns?: SNSClient;
  out: (text: string) => void;
}

export function defaultDoctorDeps(region?: string): DoctorDeps {
  const config = region ? { region } : {};
  return {
    cfn: new CloudFormationClient(config),
    quotas: new ServiceQuotasClient(config),
    lambda: new LambdaClient(config),
    sns: new SNSClient(config),
    out: (t) => process.stdout.write(t),
  };
}

/** The run's shape: from the sweep file, else from the run flags as `rcb run` reads them. */
export function runDemand(opts: DoctorOptions): { demand: RunDemand; hostedTasks: number; shards: number; label: string } {
  const callSec = opts.callSec === undefined ? DEFAULT_INFRA_ASSUMPTIONS.modelCallSec : Number(opts.callSec);
  if (!Number.isFinite(callSec) || callSec <= 0) throw new UsageError(`--call-sec must be a positive number of seconds (got ${opts.callSec})`);
  let pset: Pset;
  let samples: number;
  let entries: Array<{ name: string; entry: ModelEntry | undefined }>;
  let label: string;
  if (opts.sweep) {
    const loaded = loadSweep(opts.sweep);
    pset = loaded.run.pset;
    samples = loaded.sweep.samples;
    entries = loaded.sweep.models.map((m) => ({ name: m.name, entry: loaded.entries.get(m.name) }));
    label = `sweep ${opts.sweep}`;
  } else {
    if (!opts.model.length) throw new UsageError('give --sweep FILE or the run flags (at least one --model)');
    const hosted = hostedModels(opts.modelsFile);
    const run = resolveRun({ ...opts, timeout: '60' }, hosted);
    pset = run.pset;
    samples = run.samples;
    entries = opts.model.map((id) => ({ name: id, entry: hosted.entry(id) }));
    label = `run of ${opts.model.join(', ')}`;
  }
  const snippets = pset.papers.reduce((s, p) => s + p.snippets.length, 0);
  const hostedEntries = entries.filter((e): e is { name: string; entry: ModelEntry } => !!e.entry);
  const shards = plannedShardCount(
    pset.papers.map((p) => p.snippets.length * samples),
    entries.length,
  );
  return {
    demand: {
      papers: pset.papers.length,
      shards,
      tasks: snippets * entries.length * samples,
      models: hostedEntries.map(({ name, entry }) => ({ id: name, lane: laneOfProvider(entry.provider).lane, rate: entry.rate })),
      modelCallSec: callSec,
    },
    hostedTasks: snippets * hostedEntries.length * samples,
    shards,
    label: `${label}: ${pset.papers.length} paper(s), ${snippets} snippet(s) x ${entries.length} model(s) x ${samples} sample(s)`,
  };
}

export async function cloudDoctor(opts: DoctorOptions, deps: DoctorDeps): Promise<number> {
  const { demand, hostedTasks, shards, label } = runDemand(opts);
  const stack = await readDeployedStack(deps.cfn, opts.stackName);
  const quotas = await readAccountQuotas(deps);
  deps.out(`${label}\n`);
  const health = deps.sns ? await checkStackHealth(deps.cfn, deps.sns, opts.stackName) : [];
  const fit = formatFit([...health, ...checkFit(quotas, stack, demand)]);
  deps.out(fit.text);
  const firstLane = Object.keys(stack.lanes)[0];
  // Each hosted model's tasks go through its lane; the lanes run side by side.
  const perModel = demand.models.length ? hostedTasks / demand.models.length : 0;
  const callsByLane = new Map<string, number>();
  for (const m of demand.models) {
    const lane = (m.lane ?? firstLane).replace(/-/g, '');
    callsByLane.set(lane, (callsByLane.get(lane) ?? 0) + perModel);
  }
  const lanes = [...callsByLane].map(([lane, calls]) => ({ calls, concurrency: stack.lanes[lane] ?? 0 }));
  const infra = estimateRunInfra({ papers: demand.papers, shards, tasks: demand.tasks, interactiveCalls: hostedTasks, lanes }, stack.sizes, {
    ...DEFAULT_INFRA_ASSUMPTIONS,
    modelCallSec: demand.modelCallSec,
  });
  deps.out(formatRunInfra(infra));
  deps.out(formatIdle(idleMonthlyCost(stack.sizes)));
  return fit.failed ? 1 : 0;
}
