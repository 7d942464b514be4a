/**
 * The one "did you mean" of rcb's messages: a name that matches nothing (a model, a paper,
 * a snippet) gets the nearest known names, and the list of what would match. Every command
 * that takes such a name words its error through here, naming the flag or file it came from.
 */
import { closestNames } from './closest-names';

/** `; did you mean "a" or "b"?`, or '' when no known name is near. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const near = closestNames(name, known);
  return near.length ? `; did you mean ${near.map((n) => `"${n}"`).join(' or ')}?` : '';
}

/**
 * `SOURCE: unknown WHAT "NAME" WHERE; did you mean "..."? (WHATs: a, b, c)`: the source is the flag
 * or file the name came from (`--papers`, `--model`, `sweep.yaml: models`), `where` the
 * place it was looked for ("in the pset at /x"). The list is cut after `maxListed` names.
 */
export function unknownName(source: string, what: string, name: string, known: Iterable<string>, where: string, maxListed = 40): string {
  const all = [...new Set(known)].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }) || a.localeCompare(b));
  const listed = all.length > maxListed ? `${all.slice(0, maxListed).join(', ')}, ... (${all.length} in all)` : all.join(', ');
  return `${source}: unknown ${what} "${name}" ${where}${didYouMean(name, all)}${all.length ? ` (${what}s: ${listed})` : ''}`;
}
