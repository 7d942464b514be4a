/** The estimate bills the generator's wait at each model's typical call time (registry `call_sec`). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatInfraEstimate } from '../../app/estimate';
import { loadRegistry } from '../../adapters/models/registry';
import { DEFAULT_INFRA_ASSUMPTIONS, estimateRunRequests } from '../../core/cost/infra-cost';
import type { Pset } from '../../core/types';

const pset = { papers: [{ id: 'p', snippets: Array.from({ length: 10 }, () => ({})) }] } as unknown as Pset;
const lambdaLine = (text: string) => text.split('\n').find((l) => l.trim().startsWith('Lambda'));

describe('call time per model', () => {
  it('bills 80 s a call by default, and a model registry call_sec instead', () => {
    expect(DEFAULT_INFRA_ASSUMPTIONS.modelCallSec).toBe(80);
    expect(lambdaLine(formatInfraEstimate(pset, [{ provider: 'openai' }], 1))).toContain('10 generator call(s) x 80 s');
    expect(
      lambdaLine(
        formatInfraEstimate(
          pset,
          [
            { provider: 'openai', callSec: 20 },
            { provider: 'anthropic', callSec: 100 },
          ],
          1,
        ),
      ),
    ).toContain('20 generator call(s) x 60 s');
  });

  it('takes call_sec in a registry entry', () => {
    const [entry] = loadRegistry().filter((e) => e.provider === 'openai');
    const file = join(mkdtempSync(join(tmpdir(), 'rcb-call-sec-')), 'models.yaml');
    writeFileSync(file, `models:\n  - id: ${entry.id}\n    call_sec: 45\n`);
    expect(loadRegistry({ userFile: file }).find((e) => e.id === entry.id)?.call_sec).toBe(45);
    writeFileSync(file, `models:\n  - id: ${entry.id}\n    call_sec: -1\n`);
    expect(() => loadRegistry({ userFile: file })).toThrow(/call_sec/);
  });

  it('counts each progress check reading one task per shard, not every task (the CheckProgress reads of a long sweep)', () => {
    const shape = { papers: 20, shards: 640, tasks: 33_920, interactiveCalls: 33_920, lanes: [{ calls: 8480, concurrency: 4 }] };
    const few = estimateRunRequests({ ...shape, checks: 10 });
    const many = estimateRunRequests({ ...shape, checks: 100 });
    expect(many.readUnits - few.readUnits).toBeCloseTo(90 * 640 * 1, -2);
  });
});
