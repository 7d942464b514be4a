/** SqsTaskQueue and the generation message, with a mocked SQS client. */
import { SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { createSqsClient } from '../../adapters/aws/clients';
import { MessageFormatError, parseGenerationMessage, type GenerationMessage } from '../../adapters/aws/messages';
import { DEFAULT_LANES } from '../../infra/config';
import { EnqueueError, SqsTaskQueue, laneForProvider, type GenerationJob, type LaneRouting } from '../../adapters/aws/sqs-task-queue';

const sqsMock = mockClient(SQSClient);
const sqs = createSqsClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });

const ROUTING: LaneRouting = {
  queueUrls: { openai: 'https://sqs/openai', anthropic: 'https://sqs/anthropic', google: 'https://sqs/google' },
  defaultLane: 'openai',
};

function jobs(provider: string, count: number, prefix = provider): GenerationJob[] {
  return Array.from({ length: count }, (_, i) => ({ message: { runId: 'run-1', taskId: `${prefix}-${i}` }, provider }));
}

function sentMessages(): { queueUrl: string; messages: GenerationMessage[] }[] {
  return sqsMock.commandCalls(SendMessageBatchCommand).map((c) => ({
    queueUrl: c.args[0].input.QueueUrl!,
    messages: (c.args[0].input.Entries ?? []).map((e) => parseGenerationMessage(e.MessageBody!)),
  }));
}

const noSleep = async () => {};

beforeEach(() => {
  sqsMock.reset();
});

afterAll(() => {
  sqsMock.restore();
});

describe('laneForProvider', () => {
  it('routes providers to their lanes, and unknown ones to the default lane', () => {
    expect(laneForProvider('openai', ROUTING)).toBe('openai');
    expect(laneForProvider('openai-responses', ROUTING)).toBe('openai');
    expect(laneForProvider('anthropic', ROUTING)).toBe('anthropic');
    expect(laneForProvider('gemini', ROUTING)).toBe('google');
    expect(laneForProvider('bedrock', { ...ROUTING, defaultLane: 'anthropic' })).toBe('anthropic');
    expect(laneForProvider('openai-compatible', ROUTING)).toBe('openai');
  });

  it('lets the routing override a provider’s lane, and uses a lane named like the provider', () => {
    const routing: LaneRouting = {
      queueUrls: { ...ROUTING.queueUrls, bedrock: 'https://sqs/bedrock' },
      defaultLane: 'openai',
      providerLanes: { 'openai-compatible': 'google' },
    };

    expect(laneForProvider('openai-compatible', routing)).toBe('google');
    expect(laneForProvider('bedrock', routing)).toBe('bedrock');
  });

  it('routes every registry provider to its own lane of the deployed defaults (DEFAULT_LANES)', () => {
    const routing: LaneRouting = {
      queueUrls: Object.fromEntries(DEFAULT_LANES.map((l) => [l.name, `https://sqs/${l.name}`])),
      defaultLane: DEFAULT_LANES[0].name,
    };

    expect(laneForProvider('openai', routing)).toBe('openai');
    expect(laneForProvider('openai-responses', routing)).toBe('openai');
    expect(laneForProvider('anthropic', routing)).toBe('anthropic');
    expect(laneForProvider('gemini', routing)).toBe('gemini');
    expect(laneForProvider('bedrock', routing)).toBe('bedrock');
  });
});

describe('SqsTaskQueue', () => {
  it('refuses a routing whose default lane or provider lane has no queue', () => {
    expect(() => new SqsTaskQueue(sqs, { ...ROUTING, defaultLane: 'bedrock' })).toThrow(/default lane "bedrock" has no queue URL/);
    expect(() => new SqsTaskQueue(sqs, { ...ROUTING, providerLanes: { gemini: 'vertex' } })).toThrow(/provider "gemini" is routed to lane "vertex"/);
  });

  it('sends each job to its lane’s queue, ten messages per batch', async () => {
    sqsMock.on(SendMessageBatchCommand).callsFake((input) => ({ Successful: input.Entries.map((e: { Id: string }) => ({ Id: e.Id })), Failed: [] }));
    const queue = new SqsTaskQueue(sqs, ROUTING, { sleep: noSleep });

    const sent = await queue.enqueue([...jobs('openai', 23), ...jobs('anthropic', 3), ...jobs('bedrock', 2)]);

    expect(sent).toEqual({ openai: 25, anthropic: 3 });
    const batches = sentMessages();
    expect(batches.map((b) => [b.queueUrl, b.messages.length])).toEqual([
      ['https://sqs/openai', 10],
      ['https://sqs/openai', 10],
      ['https://sqs/openai', 5],
      ['https://sqs/anthropic', 3],
    ]);
    expect(batches.flatMap((b) => b.messages.map((m) => m.taskId))).toEqual([
      ...jobs('openai', 23).map((j) => j.message.taskId),
      ...jobs('bedrock', 2).map((j) => j.message.taskId),
      ...jobs('anthropic', 3).map((j) => j.message.taskId),
    ]);
  });

  it('resends only the entries SQS failed, until they are taken', async () => {
    sqsMock
      .on(SendMessageBatchCommand)
      .resolvesOnce({
        Successful: ['0', '1', '3'].map((Id) => ({ Id, MessageId: Id, MD5OfMessageBody: '' })),
        Failed: [
          { Id: '2', Code: 'InternalError', SenderFault: false },
          { Id: '4', Code: 'ServiceUnavailable', SenderFault: false },
        ],
      })
      .resolvesOnce({ Successful: [{ Id: '2', MessageId: 'a', MD5OfMessageBody: '' }], Failed: [{ Id: '4', Code: 'InternalError', SenderFault: false }] })
      .resolvesOnce({ Successful: [{ Id: '4', MessageId: 'b', MD5OfMessageBody: '' }], Failed: [] });
    const queue = new SqsTaskQueue(sqs, ROUTING, { sleep: noSleep });

    await queue.enqueue(jobs('openai', 5));

    expect(sentMessages().map((b) => b.messages.map((m) => m.taskId))).toEqual([
      ['openai-0', 'openai-1', 'openai-2', 'openai-3', 'openai-4'],
      ['openai-2', 'openai-4'],
      ['openai-4'],
    ]);
  });

  it('gives up after the attempts allowed, naming the messages it could not send, after sending the rest', async () => {
    sqsMock.on(SendMessageBatchCommand).callsFake((input) => {
      const entries = input.Entries as { Id: string; MessageBody: string }[];
      const failing = entries.filter((e) => JSON.parse(e.MessageBody).taskId === 'openai-7');
      return {
        Successful: entries.filter((e) => !failing.includes(e)).map((e) => ({ Id: e.Id })),
        Failed: failing.map((e) => ({ Id: e.Id, Code: 'InternalError', Message: 'try again', SenderFault: false })),
      };
    });
    const queue = new SqsTaskQueue(sqs, ROUTING, { maxAttempts: 3, sleep: noSleep });

    const error = await queue.enqueue(jobs('openai', 12)).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(EnqueueError);
    expect((error as EnqueueError).message).toBe(
      '1 generation message was not sent: run run-1 task openai-7 on lane openai (InternalError: try again; 3 attempts)',
    );
    expect((error as EnqueueError).unsent).toEqual([
      { lane: 'openai', message: { runId: 'run-1', taskId: 'openai-7' }, code: 'InternalError', reason: 'try again', senderFault: false, attempts: 3 },
    ]);
    // 2 first sends + 2 retries of the one failing entry.
    expect(sentMessages().map((b) => b.messages.length)).toEqual([10, 2, 1, 1]);
  });

  it('retries an entry SQS reports neither as sent nor as failed', async () => {
    sqsMock
      .on(SendMessageBatchCommand)
      .resolvesOnce({ Successful: [{ Id: '0', MessageId: 'a', MD5OfMessageBody: '' }], Failed: [] })
      .resolvesOnce({ Successful: [{ Id: '1', MessageId: 'b', MD5OfMessageBody: '' }], Failed: [] });

    await new SqsTaskQueue(sqs, ROUTING, { sleep: noSleep }).enqueue(jobs('openai', 2));

    expect(sentMessages().map((b) => b.messages.map((m) => m.taskId))).toEqual([['openai-0', 'openai-1'], ['openai-1']]);
  });

  it('does not retry an entry SQS rejects as the sender’s fault', async () => {
    sqsMock.on(SendMessageBatchCommand).resolves({
      Successful: [{ Id: '0', MessageId: 'a', MD5OfMessageBody: '' }],
      Failed: [{ Id: '1', Code: 'InvalidParameterValue', Message: 'bad body', SenderFault: true }],
    });
    const queue = new SqsTaskQueue(sqs, ROUTING, { sleep: noSleep });

    await expect(queue.enqueue(jobs('anthropic', 2))).rejects.toThrow(/task anthropic-1 on lane anthropic \(InvalidParameterValue: bad body; 1 attempt\)/);
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(1);
  });

  it('surfaces an error of the whole request', async () => {
    sqsMock.on(SendMessageBatchCommand).rejects(Object.assign(new Error('queue does not exist'), { name: 'QueueDoesNotExist' }));

    await expect(new SqsTaskQueue(sqs, ROUTING, { sleep: noSleep }).enqueue(jobs('gemini', 1))).rejects.toThrow('queue does not exist');
  });

  it('sends nothing for no jobs', async () => {
    expect(await new SqsTaskQueue(sqs, ROUTING).enqueue([])).toEqual({});
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });
});

describe('parseGenerationMessage', () => {
  it('reads a well-formed message', () => {
    expect(parseGenerationMessage('{"runId":"r","taskId":"t"}')).toEqual({ runId: 'r', taskId: 't' });
  });

  it('refuses a body that is not JSON, lacks a field or has extra ones', () => {
    expect(() => parseGenerationMessage('runId=r')).toThrow(MessageFormatError);
    expect(() => parseGenerationMessage('{"runId":"r"}')).toThrow(/taskId: Required/);
    expect(() => parseGenerationMessage('{"runId":"r","taskId":"t","model":"x"}')).toThrow(/Unrecognized key/);
  });
});
