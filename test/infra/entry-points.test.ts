/**
 * The minimal Lambda handlers and container entry point: until the runtime issue fills
 * them in they must never acknowledge work they did not do.
 */
import type { SQSEvent } from 'aws-lambda';
import { loadShardEnv } from '../../container/entry';
import { handler as aggregate } from '../../functions/aggregate/handler';
import { handler as checkProgress } from '../../functions/check-progress/handler';
import { handler as generate } from '../../functions/generate/handler';
import { handler as markFailed } from '../../functions/mark-failed/handler';
import { handler as planRun } from '../../functions/plan-run/handler';

// The handlers log their refusal through Powertools (JSON lines on stdout); keep test output clean.
let stdout: jest.SpyInstance;
beforeEach(() => {
  stdout = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
});
afterEach(() => stdout.mockRestore());

function sqsEvent(ids: string[]): SQSEvent {
  return {
    Records: ids.map((messageId) => ({
      messageId,
      receiptHandle: `rh-${messageId}`,
      body: JSON.stringify({ runId: 'r1', taskId: messageId }),
      attributes: {} as never,
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:lane',
      awsRegion: 'us-east-1',
    })),
  };
}

describe('generate handler (minimal)', () => {
  it('reports every record of the batch as failed, so no message is deleted unprocessed', async () => {
    const response = await generate(sqsEvent(['m1', 'm2']));
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] });
  });
});

describe('workflow handlers (minimal)', () => {
  it.each([
    ['PlanRun', () => planRun({ runId: 'r1', spec: {} })],
    ['CheckProgress', () => checkProgress({ runId: 'r1' })],
    ['Aggregate', () => aggregate({ runId: 'r1' })],
    ['MarkRunFailed', () => markFailed({ runId: 'r1', failure: { Error: 'X', Cause: 'y' } })],
  ])('%s fails loudly instead of pretending to succeed', async (name, call) => {
    await expect(call()).rejects.toThrow(`rcb: ${name} is not implemented yet (run r1)`);
  });

  it('rejects an input without a run id', async () => {
    await expect(checkProgress({})).rejects.toThrow(/runId/);
  });
});

describe('container entry point', () => {
  it('reads the shard from the environment the task definition and the overrides set', () => {
    expect(
      loadShardEnv({ RCB_RUN_ID: 'r1', RCB_SHARD: 'paper-a', RCB_TABLE: 't', RCB_BUCKET: 'b', RCB_SCRATCH: '/scratch' }),
    ).toEqual({ runId: 'r1', paper: 'paper-a', table: 't', bucket: 'b', scratch: '/scratch' });
  });

  it('names every missing variable', () => {
    expect(() => loadShardEnv({ RCB_TABLE: 't' })).toThrow('missing environment variable(s) RCB_RUN_ID, RCB_SHARD, RCB_BUCKET');
  });
});
