/**
 * What the warm server does once for all its children: it preloads what every announced
 * paper imports (standard modules too), and indexes its modules so that a child drops the
 * preloaded ones a paper file shadows and clears, at exit, only what the test imported,
 * as a fresh interpreter would, without walking every module.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Candidate, RawExecution } from '../../core/executor';
import { createColdExecutor, createWarmExecutor, detectPreloadModules, type ColdExecutor, type WarmExecutor } from '../../adapters/executor';

jest.setTimeout(120_000);

const LIMITS = { timeoutSec: 20 };

/** A paper folder holding `files`, with `paper2code_test.py` as given. */
function paperWith(root: string, name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

function candidate(paperDir: string, taskId: string, file: string, source: string): Candidate {
  return { taskId, paper: taskId.split('/')[0], paperDir, file, source };
}

// A module of the paper named like a standard module that the server preloads
// (colorsys): python run in the folder imports the paper's file, so must the child.
const SHADOW_TEST = `import colorsys
import unittest.mock
import os
print("COLORSYS_FROM", os.path.relpath(colorsys.__file__))
print("OWN", colorsys.OWN)
`;
// A module the test imports whose finalizer speaks when the interpreter clears it at exit.
const FINALIZED = `class Speaks:
    def __del__(self):
        print("FINALIZED")
speaker = Speaks()
`;
const FINALIZE_TEST = `import finalized
`;
// The same, after removing a preloaded module: the child then checks every name instead.
const FINALIZE_AFTER_DEL_TEST = `import sys
del sys.modules["json"]
import finalized
`;

let root: string;
let shadowDir: string;
let finalizeDir: string;
let laterDir: string;
let warm: WarmExecutor;
let cold: ColdExecutor;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'rcb-warm-preload-'));
  shadowDir = paperWith(root, 'shadow', { 'colorsys.py': 'OWN = "paper"\n', 'paper2code_test.py': SHADOW_TEST });
  finalizeDir = paperWith(root, 'finalize', { 'finalized.py': FINALIZED, 'paper2code_test.py': FINALIZE_TEST });
  // Announced but not among the first candidates: its imports (colorsys) must be preloaded anyway.
  laterDir = paperWith(root, 'later', { 'model.py': 'import colorsys\nimport json\n', 'paper2code_test.py': 'import model\n' });
  warm = await createWarmExecutor({ jobs: 1, limits: LIMITS, warn: () => undefined });
  cold = await createColdExecutor({ jobs: 1, limits: LIMITS, warn: () => undefined });
});

afterAll(async () => {
  await warm?.close();
  await cold?.close();
  rmSync(root, { recursive: true, force: true });
});

async function both(c: Candidate): Promise<[RawExecution, RawExecution]> {
  const [w] = await warm.run([c]);
  const [k] = await cold.run([c]);
  return [w, k];
}

describe('WarmExecutor preload and per-test bookkeeping', () => {
  it('starts its workers when told the papers, preloading what every one of them imports, standard modules included', async () => {
    // Act
    warm.expectPapers([finalizeDir, laterDir]);
    for (let i = 0; i < 600 && !warm.lastHello; i++) await new Promise((r) => setTimeout(r, 100));

    // Assess: the worker said hello before any candidate was given to it.
    expect(warm.lastHello).not.toBeNull();
    expect(warm.lastHello!.preloaded).toEqual(expect.arrayContaining(['colorsys']));
  });

  it('imports a paper file that shadows a preloaded module from the workspace, as python does', async () => {
    // Act
    const [w, k] = await both(candidate(shadowDir, 'shadow/t', 'colorsys.py', 'OWN = "candidate"\n'));

    // Assess
    expect(warm.lastHello!.preloaded).toContain('colorsys');
    expect(k.stdout.text).toContain('COLORSYS_FROM colorsys.py');
    expect(k.stdout.text).toContain('OWN candidate');
    expect(w.stdout.text).toBe(k.stdout.text);
    expect(w.exitCode).toBe(0);
  });

  it.each([
    ['after plain imports', FINALIZE_TEST],
    ['after the test removed a preloaded module', FINALIZE_AFTER_DEL_TEST],
  ])("runs the finalizers of the test's modules at exit %s, as python does", async (_name, test) => {
    // Act
    const [w, k] = await both(candidate(finalizeDir, 'finalize/t', 'paper2code_test.py', test));

    // Assess
    expect(k.stdout.text).toContain('FINALIZED');
    expect(w.stdout.text).toBe(k.stdout.text);
    expect(w.exitCode).toBe(k.exitCode);
  });
});

describe('detectPreloadModules', () => {
  it("takes the modules of the files the paper's test imports (local packages whole), not of its other scripts", () => {
    // Prepare
    const dir = paperWith(root, 'scripts', {
      'paper2code_test.py': 'import unittest\nfrom model import f\nimport helpers.io\n',
      'model.py': 'import colorsys\nimport numpy as np\nx = np.linalg\n',
      'train.py': 'import wave\nimport model\n',
    });
    mkdirSync(join(dir, 'helpers'));
    writeFileSync(join(dir, 'helpers', '__init__.py'), '');
    writeFileSync(join(dir, 'helpers', 'io.py'), 'import csv\n');

    // Act
    const modules = detectPreloadModules([dir]);

    // Assess
    expect(modules).toEqual(expect.arrayContaining(['unittest', 'colorsys', 'numpy', 'numpy.linalg', 'csv']));
    expect(modules).not.toContain('wave');
    expect(modules).not.toContain('model');
    expect(modules).not.toContain('helpers');
  });
});
