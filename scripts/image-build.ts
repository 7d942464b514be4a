/**
 * `npm run image:build [-- --tag T] [--engine podman|docker]`: builds the production
 * evaluation image, container/Dockerfile from the build context `cdk deploy` would build (the
 * stack synthesized as scripts/image-check.ts does it: `synthesize`, its one image asset), for
 * the shard task's architecture, and prints the local image id and the `rcb cloud push-image`
 * line that pushes it. The default build args are the Dockerfile's own (production: the
 * pypi layer from the lock), as in `cdk deploy`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthesize } from './image-check';
import { stackSizesFromTemplate } from '../core/cost/infra-sizes';
import { engineMessage, findEngine, runEngine } from '../bin/commands/cloud/container-engine';
import { DEFAULT_LOCAL_IMAGE } from '../bin/commands/cloud/push-image';

interface BuildOptions {
  tag: string;
  engine: string | undefined;
}

function parseArgs(argv: string[]): BuildOptions {
  const opts: BuildOptions = { tag: DEFAULT_LOCAL_IMAGE, engine: undefined };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag !== '--tag' && flag !== '--engine') throw new Error(`image:build: unknown flag ${flag} (flags: --tag T, --engine podman|docker)`);
    if (value === undefined || value.startsWith('--')) throw new Error(`image:build: ${flag} needs a value`);
    if (flag === '--tag') opts.tag = value;
    else opts.engine = value;
    i++;
  }
  return opts;
}

/** The engine's build argv for the synthesized context: the same file, context and platform as the stack's image asset. */
export function buildArgs(context: string, dockerfile: string, architecture: 'X86_64' | 'ARM64', tag: string): string[] {
  return ['build', `--platform=${architecture === 'ARM64' ? 'linux/arm64' : 'linux/amd64'}`, `--file=${join(context, dockerfile)}`, `--tag=${tag}`, context];
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const { engine, path } = findEngine(opts.engine, process.env);
  const dir = mkdtempSync(join(tmpdir(), 'rcb-image-build-'));
  try {
    process.stderr.write('image:build: synthesizing the stack for its image asset (as cdk deploy would build it)\n');
    const synth = synthesize(dir);
    const template = JSON.parse(readFileSync(join(dir, 'cdk.out', 'RcbImageCheck.template.json'), 'utf8'));
    const { architecture } = stackSizesFromTemplate(template).shardTask;
    const args = buildArgs(synth.context, synth.dockerfile, architecture, opts.tag);
    process.stderr.write(`$ ${engine} ${args.join(' ')}\n`);
    const built = await runEngine(path, args, process.env, undefined, (t) => process.stderr.write(t));
    if (built.code !== 0) throw new Error(`image:build: ${engine} build failed: ${engineMessage(built)}`);
    const inspect = await runEngine(path, ['image', 'inspect', '--format', '{{.Id}}', opts.tag], process.env);
    if (inspect.code !== 0) throw new Error(`image:build: ${engine} image inspect ${opts.tag} failed: ${engineMessage(inspect)}`);
    const id = inspect.stdout.trim();
    process.stdout.write(
      `built ${opts.tag} (${architecture === 'ARM64' ? 'linux/arm64' : 'linux/amd64'}) with ${engine}\nimage id ${id}\npush it with:\n  npx rcb cloud push-image --image ${opts.tag}${opts.engine ? ` --engine ${engine}` : ''}\n`,
    );
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
