/**
 * PlanRun's pricing of a sweep: the time planCloudRun takes for a 10-model x 5-sample run of
 * a 20-paper pset (the real ResearchCodeBench set when it is on this machine, ~30k-token
 * papers), against the per-task loop it replaced (a prompt built and tokenized for every
 * task), which is measured on a slice of the tasks and scaled up: whole, it would take
 * minutes. Prints both, their ratio, and the tokenizations each needs.
 *
 *   npm run bench -- plan [--pset DIR] [--models a,b,...] [--samples N] [--slice N]
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadPset } from '../core/pset/read-pset';
import { buildPrompt, loadTemplate } from '../core/prompt/template';
import { findSnippet } from '../core/prompt/mask';
import { planTasks } from '../core/run/plan';
import { runId as computeRunId } from '../core/ids';
import { resourcePath } from '../core/util/package-root';
import type { BlobStore } from '../core/store';
import type { RunSpec } from '../core/records';
import type { QueuedGeneration } from '../core/cloud/ports';
import { planCloudRun } from '../core/cloud/plan-cloud-run';
import { uploadPromptTemplate, uploadPsetBundle } from '../core/cloud/pset-bundle';
import { envKeySource } from '../core/keys';
import { SqliteRunStore } from '../adapters/local/sqlite-store';
import { HostedModels, costModelFor } from '../adapters/models/hosted-models';
import { loadRegistry } from '../adapters/models/registry';
import { PromptTokenCache, runModelCosts } from '../app/models';

const REAL_SET = process.env.RCB_REAL_PSET ? resolve(process.env.RCB_REAL_PSET) : resolve(__dirname, '..', '..', 'shared', 'data', 'researchcodebench', 'pset');
/** Four OpenAI models (tiktoken, the slow count) and six others (characters / 2): the mix of a sweep. */
const DEFAULT_MODELS = [
  'gpt-5.4',
  'gpt-5.4-mini',
  'gpt-4.1',
  'claude-opus-4.6',
  'claude-sonnet-4.6',
  'claude-haiku-4.5',
  'gemini-3.1-pro',
  'gemini-3-flash',
  'bedrock-nova-pro',
  'deepseek-chat',
];

class MemoryBlobs implements BlobStore {
  private readonly objects = new Map<string, Buffer>();
  async put(key: string, body: Buffer | string): Promise<void> {
    this.objects.set(key, Buffer.from(body));
  }
  async get(key: string): Promise<Buffer | null> {
    return this.objects.get(key) ?? null;
  }
  async list(prefix: string): Promise<string[]> {
    return [...this.objects.keys()].filter((k) => k.startsWith(prefix));
  }
}

function arg(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function benchPlan(args: string[]): Promise<void> {
  const psetDir = resolve(arg(args, '--pset') ?? (existsSync(REAL_SET) ? REAL_SET : join(__dirname, '..', 'examples', 'pset-mini')));
  const models = (arg(args, '--models') ?? DEFAULT_MODELS.join(',')).split(',').filter(Boolean);
  const samples = Number(arg(args, '--samples') ?? 5);
  const slice = Number(arg(args, '--slice') ?? 200);
  const pset = loadPset(psetDir);
  const templatePath = resourcePath('prompt-template.txt');
  const template = loadTemplate(templatePath);
  const hosted = new HostedModels(loadRegistry(), envKeySource({}));
  const scratch = mkdtempSync(join(tmpdir(), 'rcb-bench-plan-'));
  try {
    const blobs = new MemoryBlobs();
    const psetKey = await uploadPsetBundle(blobs, pset);
    await uploadPromptTemplate(blobs, readFileSync(templatePath, 'utf8'));
    const spec: RunSpec = {
      psetDigest: pset.digest,
      psetRoot: psetKey,
      models: models.map((id) => {
        const hit = hosted.resolve(id);
        if (!hit) throw new Error(`bench plan: ${id} is not in the registry`);
        return { id, params: hit.client.params };
      }),
      samples,
      withPaper: true,
      papers: null,
      promptTemplateDigest: template.digest,
      timeoutSec: 60,
      budgetUsd: 1_000_000,
    };
    const runId = computeRunId(spec);
    const info = Object.fromEntries(models.map((id) => [id, hosted.resolve(id)!.info]));
    const paperChars = pset.papers.map((p) => readFileSync(join(p.dir, p.paperTextFile), 'utf8').length);
    const tasks = planTasks(pset, spec);
    process.stdout.write(
      `pset ${psetDir}: ${pset.papers.length} papers (median paper ${Math.round(paperChars.sort((a, b) => a - b)[paperChars.length >> 1] / 1000)}k chars), ` +
        `${models.length} models x ${samples} samples = ${tasks.length} tasks\n`,
    );

    // Now: planCloudRun as PlanRun runs it (fresh store, fresh token cache: a cold instance).
    const tokens = new PromptTokenCache();
    const store = new SqliteRunStore(':memory:');
    const sent: QueuedGeneration[] = [];
    const t0 = process.hrtime.bigint();
    const plan = await planCloudRun(
      { store, blobs, queue: { send: async (m) => void sent.push(...m) }, costs: runModelCosts(spec, () => hosted, tokens), scratchDir: scratch },
      { runId, spec, models: info },
    );
    const planSec = Number(process.hrtime.bigint() - t0) / 1e9;
    await store.close();

    // Before: every task's prompt built and priced with an uncached cost model, on a slice.
    const papers = new Map(pset.papers.map((p) => [p.meta.id, p]));
    const costs = new Map(models.map((id) => [id, costModelFor(hosted.entry(id)!)]));
    const step = Math.max(1, Math.floor(tasks.length / slice));
    const sample = tasks.filter((_, i) => i % step === 0);
    const t1 = process.hrtime.bigint();
    for (const t of sample) {
      const paper = papers.get(t.paper)!;
      costs.get(t.model)!.worstCase(buildPrompt(template, paper, findSnippet(paper, t.snippet, t.file), spec.withPaper));
    }
    const perTaskSec = (Number(process.hrtime.bigint() - t1) / 1e9) * (tasks.length / sample.length);

    process.stdout.write(
      `planCloudRun (prompts built once each, counts by tokenizer and digest): ${planSec.toFixed(1)} s for ${plan.taskCount} tasks, ${plan.enqueued} enqueued, ` +
        `${tokens.counted} tokenizations, worst case $${plan.estimatedCostUsd.toFixed(0)}\n` +
        `per-task loop (before): ${perTaskSec.toFixed(1)} s (measured on ${sample.length} tasks, scaled to ${tasks.length}), ${tasks.length} tokenizations\n` +
        `ratio before / now: ${(perTaskSec / planSec).toFixed(1)}x; PlanRun's timeout is 300 s\n`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
