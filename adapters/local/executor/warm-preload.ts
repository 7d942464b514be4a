/**
 * Which modules a warm worker imports before forking: the top-level packages that the
 * papers' Python files import at module level, minus the papers' own modules. The server
 * skips the standard library and anything that does not import cleanly, so a name here is
 * only a suggestion.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SKIPPED_DIRS } from './workspace';

/** Imports at column 0: `import a.b, c as d` and `from a.b import x` (not relative ones). */
const IMPORT_LINE = /^(?:import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)|from\s+([A-Za-z_][\w.]*)\s+import\b)/gm;

/** Names a preload never includes: the warm server's own machinery. */
const NEVER = new Set(['rcb_driver', 'rcb_warm_server', '__future__']);

function pythonFiles(dir: string, rel = ''): string[] {
  const found: string[] = [];
  let entries;
  try {
    entries = readdirSync(join(dir, rel), { withFileTypes: true });
  } catch {
    return found;
  }
  for (const entry of entries) {
    const childRel = rel ? join(rel, entry.name) : entry.name;
    if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) found.push(...pythonFiles(dir, childRel));
    else if (entry.isFile() && entry.name.endsWith('.py')) found.push(childRel);
  }
  return found;
}

/** Top-level names that the paper's own files and packages would provide. */
function localNames(dir: string): Set<string> {
  const names = new Set<string>();
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isFile() && entry.name.endsWith('.py')) names.add(entry.name.slice(0, -3));
      else if (entry.isDirectory()) names.add(entry.name);
    }
  } catch {
    // An unreadable folder provides nothing.
  }
  return names;
}

/** Third-party top-level modules imported by the papers' files, sorted. */
export function detectPreloadModules(paperDirs: Iterable<string>): string[] {
  const modules = new Set<string>();
  for (const dir of new Set(paperDirs)) {
    const local = localNames(dir);
    for (const rel of pythonFiles(dir)) {
      let text: string;
      try {
        text = readFileSync(join(dir, rel), 'utf8');
      } catch {
        continue;
      }
      for (const match of text.matchAll(IMPORT_LINE)) {
        const names = match[1]
          ? match[1].split(',').map((part) => part.trim().split(/\s+/)[0])
          : [match[2]];
        for (const name of names) {
          const top = name.split('.')[0];
          if (top && !local.has(top) && !NEVER.has(top)) modules.add(top);
        }
      }
    }
  }
  return [...modules].sort();
}
