/** What `rcb cloud run --emulate` prints as the workflow goes, and the commands it ends with. */
import { describeState, readAgainHint } from '../../bin/commands/cloud/run-emulated';

describe('the emulated run as it prints', () => {
  it("counts PlanRun's shards as PlanRun returns them", () => {
    expect(describeState('PlanRun', { taskCount: 56, enqueued: 56, shardCount: 4, shardsKey: 'runs/r/shards.json' })).toBe(
      'PlanRun: 56 task(s), 56 enqueued, 4 shard(s)',
    );
  });

  it('puts --state-dir inside both commands it closes with, each one whole', () => {
    expect(readAgainHint('r1', '/tmp/emu')).toBe(
      'read it again with `rcb cloud status r1 --emulate --state-dir /tmp/emu` or `rcb cloud results r1 --emulate --state-dir /tmp/emu`',
    );
    expect(readAgainHint('r1')).toBe('read it again with `rcb cloud status r1 --emulate` or `rcb cloud results r1 --emulate`');
  });
});
