/**
 * The AWS APIs the deployed functions call besides DynamoDB and S3, served on
 * 127.0.0.1 for the emulator: SQS SendMessage(Batch) (PlanRun enqueues generation work;
 * the SDK sends to the host of the queue URL, so the queue URLs the functions get point
 * here), Secrets Manager GetSecretValue (the generator's provider keys) and EventBridge
 * PutEvents (the run-ended event of Aggregate and MarkRunFailed). All speak the
 * AWS JSON protocol (X-Amz-Target). Anything else is answered with an error naming the
 * operation, so a function that starts calling a new API fails here first.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const LOCAL_ACCOUNT = '000000000000';

export interface LocalAwsApiOptions {
  /** Called with the message bodies sent to a queue (its name is the last part of the URL). */
  onMessages(queueName: string, bodies: string[]): void;
  /** Secret values by ARN or name. */
  secrets: Record<string, string>;
  /** Called with the entries of each PutEvents. @default the events are accepted and dropped */
  onEvents?(entries: PutEventsEntry[]): void;
}

/** One entry of a PutEvents request, as the SDK sends it. */
export interface PutEventsEntry {
  Source: string;
  DetailType: string;
  Detail: string;
  EventBusName?: string;
}

export interface LocalAwsApi {
  endpoint: string;
  /** URL of a queue of this server, as the functions' environment names it. */
  queueUrl(name: string): string;
  close(): Promise<void>;
}

class ApiError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const md5 = (text: string): string => createHash('md5').update(text).digest('hex');

function queueName(url: unknown): string {
  if (typeof url !== 'string' || !url) throw new ApiError('InvalidAddress', 'QueueUrl is missing');
  return url.replace(/\/+$/, '').split('/').pop()!;
}

function sqs(operation: string, body: Record<string, any>, options: LocalAwsApiOptions): unknown {
  if (operation === 'SendMessage') {
    const text = String(body.MessageBody ?? '');
    options.onMessages(queueName(body.QueueUrl), [text]);
    return { MessageId: randomUUID(), MD5OfMessageBody: md5(text) };
  }
  if (operation === 'SendMessageBatch') {
    const entries = (body.Entries ?? []) as Array<{ Id: string; MessageBody: string }>;
    if (entries.length < 1 || entries.length > 10)
      throw new ApiError('AWS.SimpleQueueService.TooManyEntriesInBatchRequest', `a batch holds 1..10 entries, not ${entries.length}`);
    options.onMessages(
      queueName(body.QueueUrl),
      entries.map((e) => e.MessageBody),
    );
    return { Successful: entries.map((e) => ({ Id: e.Id, MessageId: randomUUID(), MD5OfMessageBody: md5(e.MessageBody) })), Failed: [] };
  }
  throw new ApiError('UnsupportedOperation', `the emulator's SQS does not serve ${operation}`);
}

function secretsManager(operation: string, body: Record<string, any>, options: LocalAwsApiOptions): unknown {
  if (operation !== 'GetSecretValue') throw new ApiError('UnsupportedOperation', `the emulator's Secrets Manager does not serve ${operation}`);
  const id = String(body.SecretId ?? '');
  const value = options.secrets[id];
  if (value === undefined) throw new ApiError('ResourceNotFoundException', `Secrets Manager can't find the specified secret: ${id}`);
  return { ARN: id, Name: id.split(':').pop(), SecretString: value, VersionId: 'emulated', VersionStages: ['AWSCURRENT'], CreatedDate: 0 };
}

function eventBridge(operation: string, body: Record<string, any>, options: LocalAwsApiOptions): unknown {
  if (operation !== 'PutEvents') throw new ApiError('UnsupportedOperation', `the emulator's EventBridge does not serve ${operation}`);
  const entries = (body.Entries ?? []) as PutEventsEntry[];
  if (entries.length < 1 || entries.length > 10) throw new ApiError('ValidationException', `PutEvents takes 1..10 entries, not ${entries.length}`);
  for (const e of entries) {
    if (!e.Source || !e.DetailType) throw new ApiError('ValidationException', 'an entry needs Source and DetailType');
    JSON.parse(e.Detail ?? '{}');
  }
  options.onEvents?.(entries);
  return { FailedEntryCount: 0, Entries: entries.map(() => ({ EventId: randomUUID() })) };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function reply(res: ServerResponse, status: number, value: unknown, protocol: string): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': protocol, 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': randomUUID() });
  res.end(text);
}

export async function startLocalAwsApi(options: LocalAwsApiOptions): Promise<LocalAwsApi> {
  const server: Server = createServer((req, res) => {
    const target = String(req.headers['x-amz-target'] ?? '');
    const protocol = String(req.headers['content-type'] ?? 'application/x-amz-json-1.0');
    void readBody(req).then((text) => {
      try {
        const body = text ? (JSON.parse(text) as Record<string, any>) : {};
        const [service, operation] = target.split('.');
        let result: unknown;
        if (service === 'AmazonSQS') result = sqs(operation, body, options);
        else if (service === 'secretsmanager') result = secretsManager(operation, body, options);
        else if (service === 'AWSEvents') result = eventBridge(operation, body, options);
        else throw new ApiError('UnknownOperationException', `the emulator serves no ${target || 'request without X-Amz-Target'}`);
        reply(res, 200, result, protocol);
      } catch (err) {
        const e = err instanceof ApiError ? err : new ApiError('InternalFailure', (err as Error).message, 500);
        reply(res, e.status, { __type: e.type, message: e.message }, protocol);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    endpoint,
    queueUrl: (name) => `${endpoint}/${LOCAL_ACCOUNT}/${name}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
