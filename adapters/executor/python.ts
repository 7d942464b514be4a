/**
 * Probes a Python interpreter once: where it lives and which directories it imports
 * from, so that exactly those can be bound read-only into the sandbox.
 */
import { execFile } from 'node:child_process';
import { z } from 'zod';

export interface PythonInfo {
  /** `sys.executable`, as the interpreter names itself (a venv's own `bin/python`). */
  executable: string;
  /** The executable with symlinks resolved. */
  realExecutable: string;
  /** `platform.python_version()`, e.g. `3.11.2`. */
  version: string;
  prefix: string;
  basePrefix: string;
  execPrefix: string;
  baseExecPrefix: string;
  /** Absolute `sys.path` entries that exist (directories and zip files). */
  pathEntries: string[];
}

const PROBE = `
import json, os, platform, sys
print(json.dumps({
    "executable": sys.executable,
    "realExecutable": os.path.realpath(sys.executable),
    "version": platform.python_version(),
    "prefix": sys.prefix,
    "basePrefix": sys.base_prefix,
    "execPrefix": sys.exec_prefix,
    "baseExecPrefix": sys.base_exec_prefix,
    "pathEntries": [p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)],
}))
`;

const pythonInfoSchema = z.object({
  executable: z.string().min(1),
  realExecutable: z.string().min(1),
  version: z.string(),
  prefix: z.string(),
  basePrefix: z.string(),
  execPrefix: z.string(),
  baseExecPrefix: z.string(),
  pathEntries: z.array(z.string()),
});

export interface ProbeOptions {
  /** The environment tests will get, so that PYTHONPATH and the like are seen alike. */
  env: Record<string, string>;
  /** Run the probe as this user, as the tests will be, to find permission problems early. */
  uid?: number;
  gid?: number;
}

/**
 * Runs `python` once and reports what it is. `-s` leaves out the user site directory,
 * which inside the sandbox (HOME=/tmp, an empty tmpfs) does not exist either.
 */
export function probePython(python: string, options: ProbeOptions): Promise<PythonInfo> {
  return new Promise((resolve, reject) => {
    execFile(
      python,
      ['-s', '-c', PROBE],
      { env: options.env, cwd: '/', uid: options.uid, gid: options.gid, timeout: 60_000, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error) {
          const detail = String(stderr).trim() || error.message;
          reject(new Error(`rcb: cannot run the test interpreter ${python}: ${detail}`));
          return;
        }
        try {
          resolve(pythonInfoSchema.parse(JSON.parse(String(stdout))));
        } catch (parseError) {
          reject(new Error(`rcb: unexpected answer from the test interpreter ${python}: ${String(parseError)}`));
        }
      },
    );
  });
}
