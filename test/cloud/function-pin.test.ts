import { pinEvaluation } from '../../core/cloud/plan-cloud-run';
import { cloudKeys } from '../../core/cloud/storage-layout';
import { MemoryBlobStore } from './memory-blob-store';

/** The run's pin records the Lambda versions it started with, and a later deploy does not change them (docs/cloud.md, "Pins"). */
describe('pinEvaluation and the function versions', () => {
  const v = (stage: string, n: number) => `arn:aws:lambda:us-east-1:000000000000:function:rcb-${stage}:${n}`;
  const deploy = (n: number) => ({
    taskDefinitionArn: `arn:aws:ecs:us-east-1:000000000000:task-definition/rcb-evaluator:${n}`,
    image: `repo@sha256:${String(n).repeat(64).slice(0, 64)}`,
    functions: { 'check-progress': v('check-progress', n), aggregate: v('aggregate', n), generate: v('generate', n) },
  });

  it('stores the versions of the first plan and returns them after a deploy', async () => {
    const blobs = new MemoryBlobStore();
    const first = await pinEvaluation(blobs, 'run-1', deploy(1), new Date('2026-12-04T00:00:00Z'));
    expect(first.functions).toEqual(deploy(1).functions);
    const stored = JSON.parse(String(await blobs.get(cloudKeys.evaluationPin('run-1'))));
    expect(stored.functions?.aggregate).toBe(v('aggregate', 1));
    const again = await pinEvaluation(blobs, 'run-1', deploy(2), new Date('2026-12-04T01:00:00Z'));
    expect(again.functions).toEqual(deploy(1).functions);
  });
});
