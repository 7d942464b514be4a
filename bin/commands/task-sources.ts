/**
 * Where `rcb show` and `rcb report --format html` find what the store does not keep: the
 * pset (for the spliced file's diff) and the prompt template (for the prompt). The run
 * records where its pset was read from and its template's digest; a flag overrides each.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { RunRecord } from '../../core/records';
import type { TaskSources } from '../../core/report/task-detail';
import { readPset } from '../../core/pset/read-pset';
import { parseTemplate, type PromptTemplate } from '../../core/prompt/template';
import { packageRoot } from '../../core/util/package-root';
import { loadPromptTemplate } from './common';

export interface TaskSourceFlags {
  pset?: string;
  promptTemplate?: string;
}

/** The run's template: the file given, else any shipped template with the run's digest. */
function findTemplate(run: RunRecord, file: string | undefined): PromptTemplate | null {
  if (file) return loadPromptTemplate(file);
  const dir = join(packageRoot(), 'resources');
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith('.txt')) continue;
    const text = readFileSync(join(dir, name), 'utf8');
    if (createHash('sha256').update(text).digest('hex') !== run.spec.promptTemplateDigest) continue;
    try {
      return parseTemplate(text, join(dir, name));
    } catch {
      return null;
    }
  }
  return null;
}

export function taskSources(run: RunRecord, flags: TaskSourceFlags): TaskSources {
  const template = run.source === 'import' ? null : findTemplate(run, flags.promptTemplate);
  if (run.source === 'import') return { pset: null, psetNote: 'the run was imported from overall_stats.json, which keeps no answers', template };
  const root = resolve(flags.pset ?? run.spec.psetRoot);
  if (!existsSync(root)) {
    return { pset: null, psetNote: `the pset the run used (${root}) is not on this machine; pass --pset DIR`, template };
  }
  const { pset, problems } = readPset(root, { papers: run.spec.papers });
  if (problems.length) return { pset: null, psetNote: `the pset at ${root} has ${problems.length} problem(s); run \`rcb validate --pset ${root}\``, template };
  return { pset, template };
}
