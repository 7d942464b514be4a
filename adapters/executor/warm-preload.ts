/**
 * Which modules a warm worker imports before forking: the modules that the papers' Python
 * files import at module level (standard ones too: unittest.mock alone costs a test
 * 46 ms), minus the papers' own modules. The server skips the few standard modules that
 * act when imported and anything that does not import cleanly, so a name here is only a
 * suggestion. Detected over every paper of the run (see WarmExecutor.expectPapers): on the
 * 9 published papers that run here, a test then imports nothing that the worker lacks.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_ENTRY } from '../../core/pset/read-pset';
import { SKIPPED_DIRS } from './workspace';

/** Imports at column 0: `import a.b, c as d` and `from a.b import x` (not relative ones). */
const IMPORT_LINE = /^(?:import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)|from\s+([A-Za-z_][\w.]*)\s+import\b)/gm;

/** Names a preload never includes: the warm server's own machinery. */
const NEVER = new Set(['rcb_driver', 'rcb_guard', 'rcb_warm_server', '__future__']);

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

/** The module names of each `import` / `from ... import` line at column 0 of `text`. */
function importedNames(text: string): string[] {
  return [...text.matchAll(IMPORT_LINE)].flatMap((match) => (match[1] ? match[1].split(',').map((part) => part.trim().split(/\s+/)[0]) : [match[2]]));
}

/**
 * The paper's files that its test entry point imports, directly or through other files of
 * the paper (a local package counts whole), with their text (read once, here); every file
 * when there is no entry point. Modules only the training scripts import are not worth a
 * worker's start-up time: each preloaded module costs every worker its import, on the cores
 * the tests need.
 */
function testedFiles(dir: string, local: Set<string>): Map<string, string> {
  const texts = new Map<string, string>();
  const seen = new Set<string>();
  // Without an entry point every file is read, and none is followed.
  const follow = existsSync(join(dir, TEST_ENTRY));
  const queue = follow ? [TEST_ENTRY] : pythonFiles(dir);
  while (queue.length) {
    const rel = queue.shift()!;
    if (seen.has(rel)) continue;
    seen.add(rel);
    let text: string;
    try {
      text = readFileSync(join(dir, rel), 'utf8');
    } catch {
      continue;
    }
    texts.set(rel, text);
    if (!follow) continue;
    for (const name of importedNames(text)) {
      const top = name.split('.')[0];
      if (!local.has(top)) continue;
      if (existsSync(join(dir, `${top}.py`))) queue.push(`${top}.py`);
      else if (isDirectory(join(dir, top))) queue.push(...pythonFiles(dir, top));
    }
  }
  return texts;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** `alias.attr.attr` chains, to find submodules reached by attribute (np.testing, torch.nn.functional). */
const ATTRIBUTE_CHAIN = /\b([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)/g;
/** `import a.b as c` and `from a import b as c`: the names a module is bound to. */
const ALIAS = /^(?:import\s+([A-Za-z_][\w.]*)\s+as\s+(\w+)|from\s+([A-Za-z_][\w.]*)\s+import\s+(\w+)(?:\s+as\s+(\w+))?)/gm;

/**
 * Modules imported by the papers' files that their tests import, sorted: top-level packages, dotted
 * modules named in imports, and dotted names reached by attribute from an imported name
 * (`np.testing` gives numpy.testing). Names that are not modules fail to import in the
 * server and are skipped there.
 */
export function detectPreloadModules(paperDirs: Iterable<string>): string[] {
  const modules = new Set<string>();
  for (const dir of new Set(paperDirs)) {
    const local = localNames(dir);
    for (const text of testedFiles(dir, local).values()) {
      for (const name of importedNames(text)) {
        const top = name.split('.')[0];
        if (top && !local.has(top) && !NEVER.has(top)) {
          modules.add(top);
          if (name !== top) modules.add(name);
        }
      }
      const aliases = new Map<string, string>();
      for (const match of text.matchAll(ALIAS)) {
        if (match[1]) aliases.set(match[2], match[1]);
        else aliases.set(match[5] ?? match[4], `${match[3]}.${match[4]}`);
      }
      for (const match of text.matchAll(ATTRIBUTE_CHAIN)) {
        const base = aliases.get(match[1]) ?? match[1];
        const top = base.split('.')[0];
        if (!modules.has(top) || local.has(top)) continue;
        // Only the first attribute step: deeper chains are mostly functions and classes.
        modules.add(`${base}.${match[2].slice(1).split('.')[0]}`);
      }
    }
  }
  return [...modules].sort();
}
