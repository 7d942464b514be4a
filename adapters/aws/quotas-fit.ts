/**
 * Whether a run (a sweep is one run of all its models) fits an account: its peak Lambda
 * concurrency, Fargate vCPU on Spot and on demand, state transition rate and each model's
 * rate limits against the quotas read by adapters/aws/quotas.ts. Pure: tests feed it
 * recorded SDK answers through readAccountQuotas.
 */
import type { AccountQuotas, DeployedStack, QuotaValue } from './quotas';

/** What of a run decides its peak use. */
export interface RunDemand {
  papers: number;
  /**
   * Shard tasks the run starts: one per paper and model, sliced by work (core/cloud/shard-plan.ts;
   * before a run, plannedShardCount). The Map starts up to its MaxConcurrency of them at once.
   */
  shards: number;
  tasks: number;
  /** Hosted models: id, the lane its provider's calls go through (none: the stack's first lane, as PlanRun routes), the registry's rate limits. */
  models: Array<{ id: string; lane?: string; rate?: { max_in_flight?: number; rpm?: number; tpm?: number }; tokensPerCall?: number }>;
  /** Seconds of a model call (how many calls a minute a lane makes). */
  modelCallSec: number;
}

export interface FitCheck {
  what: string;
  /** What the run needs at its peak, and what the account or provider allows. */
  need: number;
  allowed: number;
  ok: boolean;
  /** 'fail' makes doctor exit 1; 'warn' only prints. */
  severity: 'fail' | 'warn';
  /** The quota to raise (Service Quotas), or the provider limit, when not ok. */
  quota?: QuotaValue;
  advice?: string;
}

/** Functions besides the generators that may run at once: plan-run, check-progress, batch-round, aggregate. */
const ORCHESTRATION_CONCURRENCY = 4;
/** State transitions a shard makes when the Map starts it (Map iteration, RunTask, its result). */
const TRANSITIONS_PER_SHARD_START = 5;

function laneConcurrency(stack: DeployedStack, lane: string): number {
  // Lane keys are the queues' logical ids lower-cased: `open-ai` is `OpenAi`, so `openai`.
  const key = lane.replace(/-/g, '').toLowerCase();
  const found = stack.lanes[key];
  if (found === undefined) throw new Error(`the deployed stack has no lane "${lane}" (it has ${Object.keys(stack.lanes).join(', ')})`);
  return found;
}

export function checkFit(quotas: AccountQuotas, stack: DeployedStack, demand: RunDemand): FitCheck[] {
  const firstLane = Object.keys(stack.lanes)[0];
  const run = { ...demand, models: demand.models.map((m) => ({ ...m, lane: m.lane ?? firstLane })) };
  const lanes = [...new Set(run.models.map((m) => m.lane))];
  const generators = lanes.reduce((s, lane) => s + laneConcurrency(stack, lane), 0);
  // Reserved orchestration functions draw on their reservation, not on the unreserved pool.
  const orchestration = stack.reservedConcurrency > 0 ? 0 : ORCHESTRATION_CONCURRENCY;
  const lambdaPeak = generators + stack.deadLetterConcurrency + orchestration;
  // A sweep's shards are paper x model: 20 papers x 32 models start as many tasks at once as the Map allows, not 20.
  const shards = Math.min(run.shards, stack.evaluationMaxConcurrency);
  const vcpu = shards * stack.sizes.shardTask.vcpu;
  const transitionsPerSec = shards * TRANSITIONS_PER_SHARD_START;
  const checks: FitCheck[] = [
    {
      what: `Lambda concurrency: ${generators} generator(s) on lane(s) ${lanes.join(', ') || '-'} + ${stack.deadLetterConcurrency} dead-letter + ${stack.reservedConcurrency > 0 ? `0 orchestration (${stack.reservedConcurrency} reserved)` : `${ORCHESTRATION_CONCURRENCY} orchestration`}`,
      need: lambdaPeak,
      allowed: quotas.lambdaUnreservedConcurrency,
      ok: lambdaPeak <= quotas.lambdaUnreservedConcurrency,
      severity: 'fail',
      quota: quotas.lambdaConcurrency,
      advice: "or lower the lanes' maxConcurrency (rcb:lanes)",
    },
    {
      what: `Fargate Spot vCPU: ${shards} shard task(s) at once x ${stack.sizes.shardTask.vcpu} vCPU (the cluster's default capacity)`,
      need: vcpu,
      allowed: quotas.fargateSpotVcpu.value,
      ok: vcpu <= quotas.fargateSpotVcpu.value,
      severity: 'fail',
      quota: quotas.fargateSpotVcpu,
      advice: 'or lower rcb:evaluationMaxConcurrency',
    },
    {
      what: `Fargate On-Demand vCPU: the same ${shards} shard task(s) if Spot has no capacity`,
      need: vcpu,
      allowed: quotas.fargateOnDemandVcpu.value,
      ok: vcpu <= quotas.fargateOnDemandVcpu.value,
      severity: 'warn',
      quota: quotas.fargateOnDemandVcpu,
    },
    {
      what: `Step Functions state transitions per second when the Map starts ${shards} shard(s)`,
      need: transitionsPerSec,
      allowed: quotas.stateTransitionRate.value,
      ok: transitionsPerSec <= quotas.stateTransitionRate.value,
      severity: 'fail',
      quota: quotas.stateTransitionRate,
    },
  ];
  for (const m of run.models) {
    const inFlight = laneConcurrency(stack, m.lane);
    const perMinute = Math.ceil((inFlight * 60) / run.modelCallSec);
    if (m.rate?.max_in_flight !== undefined) {
      checks.push({
        what: `${m.id}: calls in flight (lane ${m.lane})`,
        need: inFlight,
        allowed: m.rate.max_in_flight,
        ok: inFlight <= m.rate.max_in_flight,
        severity: 'fail',
        advice: `the registry's rate.max_in_flight of ${m.id}: lower lane ${m.lane}'s maxConcurrency (rcb:lanes) or raise the provider's limit`,
      });
    }
    if (m.rate?.rpm !== undefined) {
      checks.push({
        what: `${m.id}: requests per minute (${inFlight} in flight, ${run.modelCallSec} s a call)`,
        need: perMinute,
        allowed: m.rate.rpm,
        ok: perMinute <= m.rate.rpm,
        severity: 'fail',
        advice: `the registry's rate.rpm of ${m.id}: lower lane ${m.lane}'s maxConcurrency or raise the provider tier`,
      });
    }
    if (m.rate?.tpm !== undefined && m.tokensPerCall !== undefined) {
      const tpm = Math.ceil(perMinute * m.tokensPerCall);
      checks.push({
        what: `${m.id}: tokens per minute (${perMinute} calls x ${Math.round(m.tokensPerCall)} tokens)`,
        need: tpm,
        allowed: m.rate.tpm,
        ok: tpm <= m.rate.tpm,
        severity: 'fail',
        advice: `the registry's rate.tpm of ${m.id}: lower lane ${m.lane}'s maxConcurrency or raise the provider tier`,
      });
    }
  }
  return checks;
}

/** The doctor's table; the last line names every quota to raise. */
export function formatFit(checks: FitCheck[]): { text: string; failed: boolean } {
  const out: string[] = [];
  for (const c of checks) {
    const mark = c.ok ? 'ok  ' : c.severity === 'fail' ? 'FAIL' : 'warn';
    const source = c.quota ? ` [${c.quota.serviceCode} ${c.quota.quotaCode} "${c.quota.name}", ${c.quota.source}]` : '';
    out.push(`${mark}  ${c.what}: needs ${c.need}, allowed ${c.allowed}${source}`);
  }
  const failing = checks.filter((c) => !c.ok && c.severity === 'fail');
  for (const c of failing) {
    out.push(
      c.quota
        ? `raise ${c.quota.serviceCode} ${c.quota.quotaCode} (${c.quota.name}) to at least ${c.need}: aws service-quotas request-service-quota-increase --service-code ${c.quota.serviceCode} --quota-code ${c.quota.quotaCode} --desired-value ${c.need}${c.advice ? `; ${c.advice}` : ''}`
        : `${c.what}: ${c.advice}`,
    );
  }
  out.push(failing.length ? `${failing.length} check(s) fail: the run would be throttled or stall` : 'the run fits the account');
  return { text: `${out.join('\n')}\n`, failed: failing.length > 0 };
}
