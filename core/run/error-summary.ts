/**
 * The errors a run's answers carry, one line per error kind with its count, the models it
 * hit and its first message, printed at the end of a run: a run whose calls all failed
 * (no network, a bad key) must say so and why, not only score 0.
 */
import type { CompletionRecord } from '../records';

export interface ErrorKindSummary {
  kind: string;
  count: number;
  models: string[];
  /** The message of the earliest answer of this kind. */
  firstMessage: string;
  /** Answers of this kind that a resumed run will ask for again (below the cap of answers per task). */
  retryable: number;
}

export function summarizeErrors(completions: Iterable<CompletionRecord>, maxAttempts: number): ErrorKindSummary[] {
  const byKind = new Map<string, ErrorKindSummary & { firstAt: string }>();
  for (const c of completions) {
    if (!c.error) continue;
    let s = byKind.get(c.error.kind);
    if (!s) byKind.set(c.error.kind, (s = { kind: c.error.kind, count: 0, models: [], firstMessage: c.error.message, firstAt: c.createdAt, retryable: 0 }));
    s.count++;
    if (!s.models.includes(c.model)) s.models.push(c.model);
    if (c.createdAt < s.firstAt) {
      s.firstAt = c.createdAt;
      s.firstMessage = c.error.message;
    }
    if ((c.attempt ?? 1) < maxAttempts) s.retryable++;
  }
  return [...byKind.values()]
    .sort((a, b) => b.count - a.count || a.kind.localeCompare(b.kind))
    .map(({ firstAt: _firstAt, ...s }) => ({ ...s, models: s.models.sort() }));
}

/** One line per kind; empty when no answer is an error. */
export function formatErrorSummary(summaries: ErrorKindSummary[]): string {
  return summaries
    .map((s) => {
      const again = s.retryable ? `; ${s.retryable} asked again when the run is resumed` : '';
      return `generation errors: ${s.count} ${s.kind} (${s.models.join(', ')})${again}; first: ${oneLine(s.firstMessage)}\n`;
    })
    .join('');
}

function oneLine(message: string): string {
  const flat = message.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
