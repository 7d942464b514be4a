/**
 * "Did you mean": the known names nearest to a misspelt one, for messages about paper
 * ids, snippet names and models.
 */

/** Levenshtein distance (insert, delete, substitute: 1 each), case-insensitive. */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The names within a third of the longer name's length of `name` (at least 2 edits, so a
 * short name's typo is still found), nearest first, at most `max`; a name that contains
 * the other (a prefix typed short) counts as near too.
 */
export function closestNames(name: string, known: Iterable<string>, max = 3): string[] {
  const scored: [string, number][] = [];
  for (const k of new Set(known)) {
    const d = editDistance(name, k);
    const limit = Math.max(2, Math.floor(Math.max(name.length, k.length) / 3));
    const contains = name.length >= 3 && (k.toLowerCase().includes(name.toLowerCase()) || name.toLowerCase().includes(k.toLowerCase()));
    if (d <= limit || contains) scored.push([k, d]);
  }
  return scored
    .sort((x, y) => x[1] - y[1] || x[0].localeCompare(y[0]))
    .slice(0, max)
    .map(([k]) => k);
}
