/**
 * Files a paper's test downloads at run time, which the sandbox cannot (it gives model-written
 * code no network), fetched on the host by `rcb env install` into the environment's read-only
 * `assets/` folder; and the known gaps of the environment, explained in one line by `rcb doctor`.
 * Both are listed in container/requirements-assets.json.
 *
 * `assets/torch` is what the executor gives the tests as TORCH_HOME when it exists
 * (adapters/executor/sandbox-host.ts), so torch.hub's `load_state_dict_from_url` (torchvision's
 * pretrained weights) finds its checkpoint there and downloads nothing.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { z } from 'zod';
import { fileSha256 } from '../../file-sha256';

/** The environment's folder of fetched assets. */
export const ASSETS_DIR = 'assets';

const assetSchema = z.object({
  paper: z.string().min(1),
  /** Where the file goes, relative to the environment's assets/ folder (torch/hub/checkpoints/...). */
  path: z.string().min(1),
  /** The file's address; or `urlFrom`, a Python expression the environment evaluates to it. */
  url: z.string().url().optional(),
  urlFrom: z.string().min(1).optional(),
  /** The start of the file's sha256 (torch.hub's check: the hex digits in the file's name). */
  sha256Prefix: z.string().regex(/^[0-9a-f]{8,64}$/),
  bytes: z.number().int().positive().optional(),
  what: z.string().min(1),
});

const gapSchema = z.object({
  paper: z.string().min(1),
  /** The note applies when doctor's reason contains this text. */
  when: z.string().min(1).optional(),
  /** The note applies while this asset (its `path`) is not in the environment. */
  asset: z.string().min(1).optional(),
  note: z.string().min(1),
});

const fileSchema = z.object({
  $comment: z.string().optional(),
  assets: z.array(assetSchema),
  gaps: z.array(gapSchema),
});

export type PaperAsset = z.infer<typeof assetSchema>;
export type PaperGap = z.infer<typeof gapSchema>;
export interface EnvNotes {
  assets: PaperAsset[];
  gaps: PaperGap[];
}

/** Reads and checks the file; an error names the file and the entry that is wrong. */
export function readEnvNotes(file: string): EnvNotes {
  if (!existsSync(file)) return { assets: [], gaps: [] };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: not JSON: ${(e as Error).message}`);
  }
  const parsed = fileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${file}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  for (const [i, a] of parsed.data.assets.entries()) {
    if ((a.url === undefined) === (a.urlFrom === undefined)) throw new Error(`${file}: assets.${i}: give exactly one of url and urlFrom`);
    if (isAbsolute(a.path) || normalize(a.path).startsWith('..')) throw new Error(`${file}: assets.${i}.path: must stay inside assets/ (${a.path})`);
  }
  for (const [i, g] of parsed.data.gaps.entries()) {
    if (g.asset && !parsed.data.assets.some((a) => a.path === g.asset)) throw new Error(`${file}: gaps.${i}.asset: no asset has the path ${g.asset}`);
  }
  return parsed.data;
}

export function assetFile(envDir: string, asset: Pick<PaperAsset, 'path'>): string {
  return join(envDir, ASSETS_DIR, asset.path);
}

/**
 * Downloads with the environment's Python (urllib: the machine's proxy variables and CA), to
 * `<file>.part` first, checking the sha256 prefix before the rename: an interrupted or wrong
 * download never takes the file's name.
 */
const FETCH = `
import hashlib, os, sys, urllib.request
url_from, url, dst, prefix = sys.argv[1:5]
if url_from:
    import importlib
    head = url_from.split(".")
    obj = None
    for i in range(len(head), 0, -1):
        try:
            obj = importlib.import_module(".".join(head[:i]))
        except ImportError:
            continue
        for attr in head[i:]:
            obj = getattr(obj, attr)
        break
    url = str(obj)
print("url " + url, flush=True)
os.makedirs(os.path.dirname(dst), exist_ok=True)
tmp = dst + ".part"
h = hashlib.sha256()
with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
    while True:
        b = r.read(1 << 20)
        if not b:
            break
        h.update(b)
        f.write(b)
d = h.hexdigest()
if not d.startswith(prefix):
    os.remove(tmp)
    sys.exit("sha256 %s does not start with the expected %s" % (d, prefix))
os.chmod(tmp, 0o644)
os.replace(tmp, dst)
print("sha256 " + d, flush=True)
`;

function runFetch(python: string, asset: PaperAsset, dst: string): Promise<{ code: number; output: string }> {
  return new Promise((res) => {
    const child = spawn(python, ['-c', FETCH, asset.urlFrom ?? '', asset.url ?? '', dst, asset.sha256Prefix], {
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const take = (c: Buffer) => {
      output = (output + c.toString('utf8')).slice(-8000);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (e) => res({ code: 1, output: e.message }));
    child.on('close', (code) => res({ code: code ?? 1, output }));
  });
}

/** The last line of a failed fetch that says why (Python's exception line). */
function fetchFailure(output: string): string {
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return [...lines].reverse().find((l) => /Error|error|sha256 |refused|not known|resolution/.test(l)) ?? lines.at(-1) ?? 'no output';
}

export interface AssetResult {
  asset: PaperAsset;
  file: string;
  state: 'present' | 'fetched' | 'missing';
  /** Why a missing asset was not fetched. */
  why?: string;
}

/**
 * Every asset into `<envDir>/assets/`: one already there with the right sha256 prefix is kept
 * (a second install fetches nothing), one that cannot be fetched is reported, not fatal: the
 * rest of the environment is usable, and doctor names the paper that needs it.
 */
export async function fetchAssets(opts: {
  envDir: string;
  python: string;
  assets: PaperAsset[];
  offline?: boolean;
  progress: (line: string) => void;
}): Promise<AssetResult[]> {
  const results: AssetResult[] = [];
  for (const asset of opts.assets) {
    const file = assetFile(opts.envDir, asset);
    const name = `${asset.paper}'s ${basename(asset.path)}`;
    if (existsSync(file) && (await fileSha256(file)).startsWith(asset.sha256Prefix)) {
      results.push({ asset, file, state: 'present' });
      continue;
    }
    if (opts.offline) {
      results.push({ asset, file, state: 'missing', why: 'offline' });
      opts.progress(`${name} is not in ${dirname(file)}, and --offline fetches nothing: ${asset.paper}'s test will not run`);
      continue;
    }
    const size = asset.bytes ? ` (${(asset.bytes / 1e6).toFixed(0)} MB)` : '';
    opts.progress(`fetching ${name}${size}: ${asset.what}`);
    const r = await runFetch(opts.python, asset, file);
    if (r.code === 0) {
      results.push({ asset, file, state: 'fetched' });
      continue;
    }
    const url = /^url (.*)$/m.exec(r.output)?.[1] ?? asset.url ?? asset.urlFrom!;
    const why = `${url}: ${fetchFailure(r.output)}`;
    results.push({ asset, file, state: 'missing', why });
    opts.progress(
      `could not fetch ${name} from ${why}; the rest of the environment is installed, ${asset.paper}'s test will not run (docs/paper-environment.md)`,
    );
  }
  return results;
}

/**
 * The known gap's note for a paper doctor found not running, or null: a note applies when its
 * `when` text is in the reason, and, with `asset`, while that asset is not in the environment
 * (`envDir` null: not rcb's environment, so no asset can be there).
 */
export function explainGap(notes: EnvNotes, paper: string, reason: string, envDir: string | null): string | null {
  for (const gap of notes.gaps) {
    if (gap.paper !== paper) continue;
    if (gap.when && !reason.includes(gap.when)) continue;
    if (gap.asset && envDir && existsSync(assetFile(envDir, { path: gap.asset }))) continue;
    return gap.note;
  }
  return null;
}
