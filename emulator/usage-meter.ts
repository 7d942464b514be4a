/**
 * Counts what the emulated flow asks of DynamoDB and S3, as AWS would bill it: a proxy in
 * front of dynalite and of s3rver that every client of the emulator (the functions, the
 * shard containers) goes through. DynamoDB requests are forwarded with
 * `ReturnConsumedCapacity: TOTAL`, so dynalite works out the capacity units by item size
 * (1 KB a write unit, 4 KB a strongly consistent read unit, half for eventually consistent);
 * writes to an item in the gsi1 index are billed again for the index, as AWS bills them.
 * S3 requests count by tier (PUT, COPY, POST, LIST: tier 1; GET, HEAD: tier 2).
 * docs/cloud.md "What a run costs in infrastructure" compares the estimate with these counts.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MeteredUsage {
  /** DynamoDB requests by operation (X-Amz-Target's). */
  dynamoRequests: Record<string, number>;
  /** Capacity units consumed: reads and writes, table and gsi1 together. */
  readUnits: number;
  writeUnits: number;
  /** S3 requests: tier 1 (PUT, COPY, POST, LIST) and tier 2 (GET, HEAD). */
  s3Tier1: number;
  s3Tier2: number;
}

export const emptyUsage = (): MeteredUsage => ({ dynamoRequests: {}, readUnits: 0, writeUnits: 0, s3Tier1: 0, s3Tier2: 0 });

/** Operations that take ReturnConsumedCapacity. */
const CAPACITY_OPS = new Set([
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'Scan',
  'BatchGetItem',
  'BatchWriteItem',
  'TransactWriteItems',
  'TransactGetItems',
]);
const WRITE_OPS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Forwards one request to `target` and answers with its response; `onResponse` sees the status and body. */
function forward(
  target: AddressInfo,
  req: IncomingMessage,
  body: Buffer,
  res: import('node:http').ServerResponse,
  onResponse?: (body: Buffer) => Buffer,
): void {
  const headers = { ...req.headers, 'content-length': String(body.length) };
  const up = httpRequest({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers }, async (answer) => {
    const raw = await readBody(answer);
    const out = onResponse ? onResponse(raw) : raw;
    res.writeHead(answer.statusCode ?? 500, { ...answer.headers, 'content-length': String(out.length) });
    res.end(out);
  });
  up.on('error', (err) => {
    res.writeHead(502);
    res.end(String(err));
  });
  up.end(body);
}

/** Whether a written item carries gsi1's key, so that its write is billed for the index too. */
const inGsi1 = (item: unknown): boolean => !!item && typeof item === 'object' && 'gsi1pk' in (item as object);

function meterDynamo(usage: MeteredUsage, op: string, request: Record<string, any>, answer: Record<string, any>): void {
  usage.dynamoRequests[op] = (usage.dynamoRequests[op] ?? 0) + 1;
  const consumed = ([] as Array<{ CapacityUnits?: number }>).concat(answer.ConsumedCapacity ?? []);
  const units = consumed.reduce((s, c) => s + (c.CapacityUnits ?? 0), 0);
  if (!WRITE_OPS.has(op)) {
    usage.readUnits += units;
    return;
  }
  // The index copy: an item written with (or updated to keep) gsi1's key is written there too.
  const written = request.Item ?? answer.Attributes;
  usage.writeUnits += units * (inGsi1(written) ? 2 : 1);
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A metering proxy in front of dynalite at `target`; its endpoint replaces dynalite's. */
export async function meterDynamoServer(target: AddressInfo, usage: MeteredUsage): Promise<{ endpoint: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const op = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? 'unknown';
    const raw = await readBody(req);
    let request: Record<string, any> = {};
    let body = raw;
    if (CAPACITY_OPS.has(op)) {
      request = JSON.parse(raw.toString('utf8') || '{}');
      const asked = request.ReturnConsumedCapacity;
      // Updates also return the item written, to see whether it is in gsi1.
      const extra = op === 'UpdateItem' && !request.ReturnValues ? { ReturnValues: 'ALL_NEW' } : {};
      body = Buffer.from(JSON.stringify({ ...request, ReturnConsumedCapacity: 'TOTAL', ...extra }));
      forward(target, req, body, res, (answerRaw) => {
        try {
          const answer = JSON.parse(answerRaw.toString('utf8'));
          if (!answer.__type) meterDynamo(usage, op, request, answer);
          if (!asked) delete answer.ConsumedCapacity;
          if (extra.ReturnValues) delete answer.Attributes;
          return Buffer.from(JSON.stringify(answer));
        } catch {
          return answerRaw;
        }
      });
      return;
    }
    usage.dynamoRequests[op] = (usage.dynamoRequests[op] ?? 0) + 1;
    forward(target, req, body, res);
  });
  return { endpoint: await listen(server), server };
}

/** A counting proxy in front of s3rver at `target`. */
export async function meterS3Server(target: AddressInfo, usage: MeteredUsage): Promise<{ endpoint: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const method = req.method ?? 'GET';
    const listing = method === 'GET' && /^\/[^/?]+\/?(\?|$)/.test(req.url ?? '');
    // DELETE is free; a GET of the bucket itself is a LIST (tier 1).
    if (method === 'HEAD' || (method === 'GET' && !listing)) usage.s3Tier2++;
    else if (method !== 'DELETE') usage.s3Tier1++;
    forward(target, req, body, res);
  });
  return { endpoint: await listen(server), server };
}
