/**
 * The environment of a test process: an allow-list, never the caller's whole
 * environment (SPEC 7: generated code is untrusted, and the parent holds API keys).
 */

/** Default directories searched for programs inside the sandbox (after the interpreter's). */
const SYSTEM_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** Names that may hold credentials; refused even when a caller asks for them. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^AWS_/i;

/**
 * One thread for every BLAS and OpenMP runtime a test may load (OpenBLAS, MKL, BLIS, GotoBLAS,
 * Accelerate, numexpr; torch follows OMP_NUM_THREADS). Tests run `jobs` at a time on the
 * machine's cores, so a second thread per test only oversubscribes them: on the 9 real
 * papers one thread was the fastest for every paper (OpenBLAS alone defaults to one per core).
 */
export const ONE_THREAD: Readonly<Record<string, string>> = {
  OMP_NUM_THREADS: '1',
  MKL_NUM_THREADS: '1',
  OPENBLAS_NUM_THREADS: '1',
  BLIS_NUM_THREADS: '1',
  GOTO_NUM_THREADS: '1',
  VECLIB_MAXIMUM_THREADS: '1',
  NUMEXPR_NUM_THREADS: '1',
};

const VALID_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

export interface SandboxEnvironmentOptions {
  /** Directory of the interpreter, searched first so `python` in a test finds the same one. */
  interpreterDir?: string;
  /** Extra names passed through from `parentEnv` when set there. */
  allow?: readonly string[];
  /** The environment to take allowed values from. @default process.env */
  parentEnv?: NodeJS.ProcessEnv;
  /** Told about each refused name. */
  warn?: (message: string) => void;
}

/**
 * Builds the allow-listed environment of a test process. Values of allowed names come
 * from the parent and override the defaults (say, OMP_NUM_THREADS); secret-looking
 * names are refused and reported through `warn`.
 */
export function sandboxEnvironment(options: SandboxEnvironmentOptions = {}): Record<string, string> {
  const parentEnv = options.parentEnv ?? process.env;
  const pathDirs = options.interpreterDir ? [options.interpreterDir, ...SYSTEM_PATH] : SYSTEM_PATH;
  const env: Record<string, string> = {
    PATH: [...new Set(pathDirs)].join(':'),
    HOME: '/tmp',
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    ...ONE_THREAD,
    MPLBACKEND: 'Agg',
  };
  for (const name of options.allow ?? []) {
    if (!VALID_NAME.test(name)) {
      options.warn?.(`rcb: not passing environment variable ${JSON.stringify(name)} to tests: not a valid name`);
    } else if (isSecretName(name)) {
      options.warn?.(`rcb: refusing to pass environment variable ${name} to tests: it may hold a credential`);
    } else {
      const value = parentEnv[name];
      if (value !== undefined) env[name] = value;
    }
  }
  return env;
}
