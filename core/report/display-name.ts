/**
 * The name a reader knows a model by: the published results' `llm_cfg.pretty_name`
 * (`Gemini-2.5-Pro-Preview-05-06` for the id `GEMINI_2_5_PRO_PREVIEW_05_06`), else a
 * `displayName` the run recorded for it, else its id. Reports show this name and keep the
 * id beside it (tooltips, tables), since the id is what `--model` and `rcb show` take.
 */
import type { ModelInfo } from '../records';

export function displayName(model: string, info: ModelInfo | undefined): string {
  const cfg = info?.config ?? {};
  for (const key of ['pretty_name', 'displayName', 'display_name']) {
    const v = cfg[key];
    if (typeof v === 'string' && v.trim()) return v.trim();
  }
  const own = (info as { displayName?: unknown } | undefined)?.displayName;
  return typeof own === 'string' && own.trim() ? own.trim() : model;
}
