/**
 * The infrastructure estimate against what the emulated flow asks of AWS (docs/cloud.md
 * "What a run costs in infrastructure"): a 4 paper x 5 model x 2 sample sweep through the
 * emulated cloud with its DynamoDB and S3 requests metered as AWS bills them
 * (emulator/usage-meter.ts: capacity units by item size, gsi1 writes, S3 tiers) and its SQS
 * requests from the lanes; the estimate for the same shape (and the emulator's number of
 * progress checks) must be within 15% of each. RCB_USAGE_PAPERS (1-4) and RCB_USAGE_SAMPLES
 * give other shapes (the four the estimate's coefficients were fitted to are in docs/cloud.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelClient } from '../../core/model';
import { replayModels } from '../../adapters/models/offline';
import { emulateCloudRun, type EmulatedRun } from '../../emulator/emulated-run';
import { cachedWorkflow } from '../../emulator/assembly-cache';
import { resolveRun } from '../../bin/commands/resolve-run';
import { estimateRunRequests } from '../../core/cost/infra-cost';
import { tempDir } from '../helpers/cli';
import { STATE_NAMES } from '../../infra/state-names';

const PAPERS = ['p00', 'p01', 'p02', 'p03'].slice(0, Number(process.env.RCB_USAGE_PAPERS) || 4);
const MODELS = ['m00', 'm01', 'm02', 'm03', 'm04'];
const SAMPLES = Number(process.env.RCB_USAGE_SAMPLES) || 2;

function writePset(root: string): void {
  writeFileSync(
    join(root, 'papers.yaml'),
    PAPERS.map(
      (id) => `- id: ${id}\n  title: Paper ${id}\n  first_commit_date: 2024-03-15\n  annotated_file_paths: model.py\n  context_file_paths: utils.py\n`,
    ).join(''),
  );
  for (const id of PAPERS) {
    mkdirSync(join(root, id), { recursive: true });
    writeFileSync(join(root, id, 'paper2code_paper.tex'), `\\section{${id}}\nWe double.\n`);
    writeFileSync(join(root, id, 'model.py'), 'def f(x):\n    # <paper2code name="double">\n    b = x * 2\n    # </paper2code name="double">\n    return b\n');
    writeFileSync(join(root, id, 'utils.py'), 'def helper():\n    return 1\n');
    writeFileSync(
      join(root, id, 'paper2code_test.py'),
      'import unittest\nimport model\n\n\nclass T(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(model.f(3), 6)\n\n\nif __name__ == "__main__":\n    unittest.main()\n',
    );
  }
}

function writeReplay(path: string): void {
  const lines: string[] = [];
  for (const model of MODELS)
    for (const paper of PAPERS)
      for (let sample = 0; sample < SAMPLES; sample++)
        lines.push(JSON.stringify({ paper, snippet: 'double', model, sample, completion: '```python\n    b = x * 2\n```\n' }));
  writeFileSync(path, `${lines.join('\n')}\n`);
}

let run: EmulatedRun;

beforeAll(async () => {
  const dir = tempDir('rcb-usage-');
  const psetDir = join(dir, 'pset');
  mkdirSync(psetDir);
  writePset(psetDir);
  const replay = join(dir, 'sweep.jsonl');
  writeReplay(replay);
  // Answered as a hosted model is: through the lanes and the generator, not at planning.
  const clients = new Map<string, ModelClient>(replayModels(replay).map((m) => [m.id, Object.assign(Object.create(m) as ModelClient, { offline: false })]));
  const resolved = resolveRun({ pset: psetDir, model: [`replay:${replay}`], samples: String(SAMPLES), timeout: '30', paper: true }, null);
  const request = { pset: resolved.pset, templateText: resolved.template.text, spec: resolved.spec, models: resolved.models.info };
  const { workflow } = await cachedWorkflow({ bundle: true });
  run = await emulateCloudRun(request, {
    workflow,
    functions: 'source',
    clients,
    python: process.env.RCB_PYTHON || '/usr/bin/python3',
    jobs: 1,
    unsafeNoSandbox: true,
    meterUsage: true,
  });
}, 900_000);

afterAll(async () => {
  await run?.close();
});

describe('the estimate against the emulated flow (4 x 5 x 2)', () => {
  it('counts DynamoDB capacity units, S3 and SQS requests within 15% of the metered run', () => {
    expect(run.succeeded).toBe(true);
    const usage = run.usage!;
    const shards = run.shardRuns.length;
    const tasks = PAPERS.length * MODELS.length * SAMPLES;
    const checks = run.history.entered[STATE_NAMES.checkProgress] ?? 0;
    const est = estimateRunRequests({ papers: PAPERS.length, shards, tasks, interactiveCalls: tasks, lanes: [{ calls: tasks, concurrency: 8 }], checks });
    const measured = {
      writeUnits: usage.writeUnits,
      readUnits: usage.readUnits,
      s3Tier1: usage.s3Tier1,
      s3Tier2: usage.s3Tier2,
      sqsRequests: Math.ceil(run.lanes.sent / 10) + 2 * run.lanes.delivered,
    };
    process.stderr.write(
      `metered: ${JSON.stringify({ ...measured, dynamoRequests: usage.dynamoRequests, shards, checks: run.history.entered[STATE_NAMES.checkProgress] })}\nestimated: ${JSON.stringify(est)}\n`,
    );
    const off = (Object.keys(measured) as Array<keyof typeof measured>).filter((k) => Math.abs(est[k] - measured[k]) / measured[k] > 0.15);
    expect(off.map((k) => `${k}: estimated ${est[k]}, metered ${measured[k]}`)).toEqual([]);
  });
});
