/**
 * What a run with hosted models will cost before it pays: the prompts grouped by paper (the
 * shared prefix a provider may cache), each model's estimate, and the table `rcb estimate`
 * and a paid `rcb run` print.
 */
import type { Pset } from '../core/types';
import { buildPrompt, type PromptTemplate } from '../core/prompt/template';
import type { HostedModels } from '../adapters/models/hosted-models';
import type { ModelEntry } from '../adapters/models/registry';
import { estimateModel, type ModelEstimate, type PromptGroup } from '../adapters/models/estimate';
import { describeTokenCount } from '../adapters/models/tokens';
import { defaultLanes, laneOfProvider } from '../adapters/models/provider-lanes';
import { estimateRunInfra, formatRunInfra, idleMonthlyCost, DEFAULT_INFRA_ASSUMPTIONS, DEFAULT_STACK_SIZES } from '../core/cost/infra-cost';
import { plannedShardCount } from '../core/cloud/shard-plan';

/** One prompt group per paper: the shared prefix and each task x sample's own suffix. */
export function promptGroups(pset: Pset, template: PromptTemplate, withPaper: boolean, samples: number): PromptGroup[] {
  return pset.papers.map((paper) => {
    let prefix = '';
    const suffixes: string[] = [];
    for (const snippet of paper.snippets) {
      const p = buildPrompt(template, paper, snippet, withPaper);
      prefix = p.text.slice(0, p.sharedPrefixChars);
      for (let i = 0; i < samples; i++) suffixes.push(p.text.slice(p.sharedPrefixChars));
    }
    return { prefix, suffixes };
  });
}

const usd = (x: number) => `$${x.toFixed(x < 1 ? 4 : 2)}`;

export function formatEstimates(estimates: ModelEstimate[], budgetUsd: number | null): string {
  const header = [
    'model',
    'calls',
    'input tokens',
    'cached',
    'output tokens',
    'expected',
    'no caching',
    'saving',
    'worst case',
    'batch expected',
    'batch worst',
  ];
  const rows = estimates.map((e) => [
    e.modelId,
    String(e.calls),
    String(e.inputTokens),
    String(e.cachedInputTokens),
    String(e.outputTokens),
    usd(e.usd),
    usd(e.usdWithoutCaching),
    usd(e.savingUsd),
    usd(e.worstCaseUsd),
    e.batch ? usd(e.batch.usd) : '-',
    e.batch ? usd(e.batch.worstCaseUsd) : '-',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const out = [line(header), ...rows.map(line), ''];
  const methods = [
    ...new Set(estimates.map((e) => `${e.modelId}: ${describeTokenCount(e.tokenCount)}, ${e.outputTokensPerCall} output tokens assumed per call`)),
  ];
  out.push('input tokens counted per model:', ...methods.map((m) => `  ${m}`));
  const expected = estimates.reduce((a, e) => a + e.usd, 0);
  const worst = estimates.reduce((a, e) => a + e.worstCaseUsd, 0);
  out.push(`total expected ${usd(expected)}; worst case (every call at its output limit) ${usd(worst)}`);
  const batched = estimates.filter((e) => e.batch);
  if (batched.length) {
    out.push(
      `batch mode (${batched.map((e) => e.modelId).join(', ')}; batch prices as of ${[...new Set(batched.map((e) => e.batch!.pricesAsOf))].join(', ')}; no cache hits counted): ` +
        `expected ${usd(batched.reduce((a, e) => a + e.batch!.usd, 0))}, worst case ${usd(batched.reduce((a, e) => a + e.batch!.worstCaseUsd, 0))}`,
    );
  }
  // Batch prices are about half, but a batch counts no cache hits: with a long shared prefix
  // (the paper), cached interactive calls can be cheaper, and a user choosing --batch for
  // the price should be told.
  for (const e of batched) {
    if (e.batch!.usd > e.usd) {
      out.push(
        `warning: for ${e.modelId} batch mode is dearer than interactive calls with prompt caching (expected ${usd(e.batch!.usd)} vs ${usd(e.usd)}): ` +
          'a batch counts no cache hits; leave out --batch (or mode: batch in a sweep) for this model',
      );
    }
  }
  if (budgetUsd !== null) {
    out.push(
      expected > budgetUsd
        ? `the expected cost exceeds the budget of ${usd(budgetUsd)}: the run will stop in state budget_exhausted before finishing`
        : `budget ${usd(budgetUsd)}: ${worst <= budgetUsd ? 'covers even the worst case' : 'covers the expected cost; the worst case would exceed it'}`,
    );
  }
  return `${out.join('\n')}\n`;
}

/** Estimates for the hosted models of a run (offline models cost nothing). */
export function estimateRun(
  hosted: HostedModels,
  ids: string[],
  pset: Pset,
  template: PromptTemplate,
  withPaper: boolean,
  samples: number,
  temperature?: number,
  say: (line: string) => void = () => undefined,
): ModelEstimate[] {
  const groups = promptGroups(pset, template, withPaper, samples);
  const entries = ids.map((id) => hosted.entry(id, { temperature })).filter((e): e is ModelEntry => !!e);
  // Counting tokens of every prompt of a full set takes tens of seconds: say what is going on.
  const prompts = groups.reduce((a, g) => a + g.suffixes.length, 0);
  say(`counting the input tokens of ${prompts} prompt(s) on ${groups.length} paper(s) for ${entries.length} model(s) ...`);
  return entries.map((entry, i) => {
    const started = Date.now();
    const estimate = estimateModel(entry, groups);
    say(`  ${entry.id} (${i + 1}/${entries.length}): ${estimate.inputTokens} input tokens, counted in ${((Date.now() - started) / 1000).toFixed(1)}s`);
    return estimate;
  });
}

/**
 * The infrastructure lines of `rcb estimate` and `rcb sweep plan`: the run on the default
 * stack (its synthesized sizes and lanes), every hosted model's calls interactive unless
 * `batched` says otherwise, and the idle stack beside.
 */
export function formatInfraEstimate(pset: Pset, models: Array<{ provider: string | null; batched?: boolean; callSec?: number }>, samples: number): string {
  const snippets = pset.papers.reduce((s, p) => s + p.snippets.length, 0);
  const lanes = defaultLanes();
  const interactiveModels = models.filter((m) => m.provider && !m.batched);
  const callsByLane = new Map<string, number>();
  for (const m of interactiveModels) {
    const lane = laneOfProvider(m.provider!).lane ?? lanes[0].name;
    callsByLane.set(lane, (callsByLane.get(lane) ?? 0) + snippets * samples);
  }
  const laneLoads = lanes.filter((l) => callsByLane.has(l.name)).map((l) => ({ calls: callsByLane.get(l.name)!, concurrency: l.maxConcurrency }));
  const interactive = interactiveModels.length;
  const shards = plannedShardCount(
    pset.papers.map((p) => p.snippets.length * samples),
    models.length,
  );
  // Every interactive model makes the same number of calls: the generator bills their mean wait.
  const callSec = interactive
    ? interactiveModels.reduce((s, m) => s + (m.callSec ?? DEFAULT_INFRA_ASSUMPTIONS.modelCallSec), 0) / interactive
    : DEFAULT_INFRA_ASSUMPTIONS.modelCallSec;
  const estimate = estimateRunInfra(
    { papers: pset.papers.length, shards, tasks: snippets * models.length * samples, interactiveCalls: snippets * interactive * samples, lanes: laneLoads },
    DEFAULT_STACK_SIZES,
    { ...DEFAULT_INFRA_ASSUMPTIONS, modelCallSec: callSec },
  );
  return formatRunInfra(estimate, idleMonthlyCost(DEFAULT_STACK_SIZES));
}
