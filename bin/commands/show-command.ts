import type { Judge } from '../../core/types';
import type { TaskRecord, Verdict } from '../../core/records';
import { caughtCheat, cheatSummary } from '../../core/judge';
import { defaultJudge } from '../../core/report/build-report';
import { countDetails, detailStatus, formatTaskDetail, promptPrefixes, taskDetails } from '../../core/report/task-detail';
import { unknownName } from '../../core/util/did-you-mean';
import { readRunDir, UsageError } from './common';
import { taskSources, type TaskSourceFlags } from './task-sources';

export interface ShowOptions extends TaskSourceFlags {
  paper?: string;
  snippet?: string;
  model?: string;
  sample?: string;
  failed?: boolean;
  judge?: string;
  prompt?: boolean;
}

/** Per model, the shown tasks that pass the original rule and fail the strict judge, by cheat class. */
function cheatsByModel(details: { task: TaskRecord; verdict: Verdict | null }[]): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  for (const d of details) {
    const cheat = d.verdict ? caughtCheat(d.verdict) : null;
    if (!cheat) continue;
    const counts = out.get(d.task.model) ?? {};
    counts[cheat] = (counts[cheat] ?? 0) + 1;
    out.set(d.task.model, counts);
  }
  return out;
}

/** A filter value that matches nothing gets the list of what would, nearest first. */
function checkValue(flag: string, value: string | undefined, present: string[]): void {
  if (value === undefined || present.includes(value)) return;
  throw new UsageError(unknownName(flag, flag.slice(2), value, present, 'among the tasks of the run'));
}

export async function showCommand(runDir: string, opts: ShowOptions): Promise<number> {
  if (opts.judge !== undefined && opts.judge !== 'strict' && opts.judge !== 'official') {
    throw new UsageError(`--judge must be one of strict, official (got "${opts.judge}")`);
  }
  const loaded = await readRunDir(runDir);
  const judge: Judge = (opts.judge as Judge | undefined) ?? defaultJudge(loaded.run, 'table');
  const sample = opts.sample === undefined ? undefined : Number(opts.sample);
  if (sample !== undefined && !(Number.isInteger(sample) && sample >= 0)) throw new UsageError(`--sample must be a whole number >= 0 (got "${opts.sample}")`);
  checkValue('--paper', opts.paper, [...new Set(loaded.tasks.map((t) => t.paper))]);
  const inPaper = loaded.tasks.filter((t) => !opts.paper || t.paper === opts.paper);
  checkValue('--snippet', opts.snippet, [...new Set(inPaper.map((t) => t.snippet))]);
  checkValue('--model', opts.model, [...new Set(loaded.tasks.map((t) => t.model))]);
  const chosen = inPaper.filter(
    (t: TaskRecord) =>
      (!opts.snippet || t.snippet === opts.snippet) && (!opts.model || t.model === opts.model) && (sample === undefined || t.sample === sample),
  );
  const sources = taskSources(loaded.run, opts);
  let details = taskDetails(loaded, judge, sources, chosen);
  // Failed means judged and not passing: an untested task or one whose paper cannot run here did not fail.
  if (opts.failed) details = details.filter((d) => detailStatus(d) === 'fail');
  if (!details.length) {
    process.stderr.write(`no task ${opts.failed ? `failed the ${judge} judge` : 'matches'} among the ${chosen.length} selected\n`);
    return 0;
  }
  const prefixes = opts.prompt ? promptPrefixes(loaded.run, sources) : new Map<string, string>();
  for (const d of details) {
    process.stdout.write(formatTaskDetail(d, judge));
    if (opts.prompt && d.promptTail !== null) process.stdout.write(`--- prompt:\n${prefixes.get(d.task.paper) ?? ''}${d.promptTail}`);
    process.stdout.write('\n');
  }
  const n = countDetails(details);
  const rest = [
    n.untested ? `${n.untested} untested` : '',
    n.envBroken ? `${n.envBroken} env_broken (their paper cannot run here; out of the scores)` : '',
  ].filter(Boolean);
  process.stderr.write(`${n.shown} task(s) shown, ${n.failed} failed under the ${judge} judge (${[`${n.passed} passed`, ...rest].join(', ')})\n`);
  for (const [model, cheats] of cheatsByModel(details)) process.stderr.write(`cheats caught for ${model}: ${cheatSummary(cheats)}\n`);
  return 0;
}
