/**
 * The shard task's tags (infra/shard-run-task.ts): RunTask refuses a task whose tag value
 * holds a character ECS does not allow, so the paper id goes in through ecsTagValue
 * (core/cloud/ecs-tag-value.ts), written into each wave's items by CheckProgress and read by
 * the evaluation Map's ItemSelector.
 */
import { ecsTagValue } from '../../core/cloud/ecs-tag-value';
import { checkProgress } from '../../core/cloud/check-progress';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { RunContextCache } from '../../core/cloud/run-context';
import { cloudFixture } from '../cloud/cloud-fixture';
import { allStates, sharedStack, stateMachineDefinition } from './helpers';

/** ECS `Tag.value`: letters, numbers, spaces and `_ . : / = + - @`, at most 256 characters. */
const ECS_TAG_VALUE = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]{0,256}$/u;

describe('ecsTagValue', () => {
  it('keeps an id ECS accepts as it is', () => {
    for (const id of ['grouprms', 'minp', 'Diff Transformer', 'paper_2.v1', 'a/b:c=d@e-f']) expect(ecsTagValue(id)).toBe(id);
  });

  it('turns every other id into a value ECS accepts, two ids never into one', () => {
    // Prepare: ids RunTask would refuse, some of which differ only in the refused characters.
    const ids = [
      'p#1',
      'p!1',
      'p$1',
      "o'brien",
      'a(b)',
      'tab\there',
      'nl\nx',
      'x'.repeat(300),
      `${'y'.repeat(256)}!`,
      'emoji-🙂',
      'a+b',
      'a_b',
      'semi;colon',
      'quote"d',
    ];

    // Act
    const values = ids.map(ecsTagValue);

    // Assess
    expect(values.filter((v) => !ECS_TAG_VALUE.test(v))).toEqual([]);
    expect(new Set(values).size).toBe(ids.length);
    expect([...values[7]].length).toBe(256);
  });
});

describe('the shard task tags', () => {
  it('take the paper from the wave item’s tag, which CheckProgress writes with ecsTagValue', async () => {
    // Prepare: the synthesized workflow, and one wave of the fixture's run.
    const states = allStates(stateMachineDefinition(sharedStack().template).States);
    const runTasks = Object.values(states).filter((s) => String(s.Resource ?? '').includes(':ecs:runTask'));
    const maps = Object.values(states).filter((s) => s.ItemSelector?.['paperTag.$']);
    const f = await cloudFixture();
    await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
    const contexts = new RunContextCache({ store: f.store, blobs: f.blobs, scratchDir: f.scratchDir });
    for (const { message } of f.queue.sent) await generateTask({ store: f.store, clients: f.clients }, await contexts.get(message.runId), message);

    // Act
    const progress = await checkProgress(f.store, f.input.runId, { waves: { blobs: f.blobs, execution: 'exec-1', previous: { waves: 0 } } });
    const items = JSON.parse((await f.blobs.get(progress.wave!.key))!.toString('utf8')) as Array<{ paper: string; tag: string }>;

    // Assess
    expect(runTasks.length).toBeGreaterThan(0);
    for (const task of runTasks) expect(task.Parameters.Tags).toContainEqual({ Key: 'rcb:shard', 'Value.$': '$.paperTag' });
    expect(maps.map((m) => m.ItemSelector['paperTag.$'])).toEqual(['$$.Map.Item.Value.tag']);
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) expect(item.tag).toBe(ecsTagValue(item.paper));
  });
});
