/**
 * The container engine (podman or docker) that `npm run image:build` builds with and
 * `rcb cloud push-image` logs in and pushes with: found on PATH, driven as a child process
 * whose argv and output rcb may print. A secret goes only to its stdin.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export const ENGINES = ['podman', 'docker'] as const;
export type Engine = (typeof ENGINES)[number];

export interface EngineResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The first of `names` that is an executable on `env.PATH`, as its full path. */
export function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

/** The engine to use: `--engine`'s (which must be on PATH), else podman, else docker. */
export function findEngine(flag: string | undefined, env: NodeJS.ProcessEnv): { engine: Engine; path: string } {
  if (flag !== undefined && !(ENGINES as readonly string[]).includes(flag)) throw new Error(`--engine ${flag}: expected podman or docker`);
  for (const engine of flag ? [flag as Engine] : ENGINES) {
    const path = onPath(engine, env);
    if (path) return { engine, path };
  }
  throw new Error(
    flag
      ? `--engine ${flag}: ${flag} is not on PATH (${env.PATH ?? 'PATH unset'})`
      : `no container engine: neither podman nor docker is on PATH (${env.PATH ?? 'PATH unset'}); install one or pass --engine`,
  );
}

/** Runs the engine with `args`, `stdin` (if any) written to its standard input, output collected. */
export function runEngine(path: string, args: string[], env: NodeJS.ProcessEnv, stdin?: string, onOutput?: (text: string) => void): Promise<EngineResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(path, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    // Decoded by the streams: a chunk may end inside a UTF-8 character.
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      stdout += d;
      onOutput?.(d);
    });
    child.stderr.on('data', (d: string) => {
      stderr += d;
      onOutput?.(d);
    });
    child.on('error', (e) => reject(new Error(`${path} ${args[0] ?? ''}: ${e.message}`)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin ?? '');
  });
}

/** The engine's own message of a failed command: its last lines of stderr (else stdout). */
export function engineMessage(r: EngineResult): string {
  const text = (r.stderr.trim() || r.stdout.trim() || `exit code ${r.code}`).split('\n');
  return text.slice(-5).join('\n');
}
