/**
 * A local HTTP server (HTTP/1.1, or h2c for Bedrock's HTTP/2 client) that records the
 * requests it gets and answers each with the next scripted reply.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json: any;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as it is. */
  body?: unknown;
  /** Wait this long before answering (a slow provider). */
  delayMs?: number;
  /** Drop the connection instead of answering (ECONNRESET). */
  reset?: boolean;
}

export type Responder = (req: RecordedRequest, index: number) => Reply | Promise<Reply>;

export interface FakeProvider {
  url: string;
  requests: RecordedRequest[];
  /** Queue replies; when the queue is empty the fallback answers. */
  reply(...replies: Reply[]): void;
  close(): Promise<void>;
}

export async function startFakeProvider(fallback: Responder, opts: { http2?: boolean } = {}): Promise<FakeProvider> {
  const requests: RecordedRequest[] = [];
  const queue: Reply[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const handle = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): void => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', async () => {
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const recorded: RecordedRequest = { method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers }, body, json };
      requests.push(recorded);
      const reply = queue.length > 0 ? (queue.shift() as Reply) : await fallback(recorded, requests.length - 1);
      const send = (): void => {
        if (reply.reset) {
          if ('stream' in req && req.stream) req.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
          else (req as http.IncomingMessage).socket.destroy();
          return;
        }
        const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
        try {
          res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
          res.end(text);
        } catch {
          // the client gave up on us (timeout test)
        }
      };
      if (reply.delayMs) {
        const t = setTimeout(() => {
          timers.delete(t);
          send();
        }, reply.delayMs);
        timers.add(t);
      } else send();
    });
  };

  // Both servers answer through `handle`; they differ in how open connections are dropped.
  let server: http.Server | http2.Http2Server;
  let dropConnections: () => void;
  if (opts.http2) {
    const h2 = http2.createServer(handle);
    const sessions = new Set<http2.ServerHttp2Session>();
    h2.on('session', (s) => {
      sessions.add(s);
      s.on('close', () => sessions.delete(s));
    });
    server = h2;
    dropConnections = () => sessions.forEach((s) => s.destroy());
  } else {
    const h1 = http.createServer(handle);
    server = h1;
    dropConnections = () => h1.closeAllConnections();
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (...r) => queue.push(...r),
    close: async () => {
      timers.forEach(clearTimeout);
      dropConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
