/**
 * The state of a provider's batch service, shared by the local servers written for each
 * provider's batch wire format (fake-batch-servers.ts): batches of requests named by custom
 * id, ended as a scenario says (all answered, expired with half failed, held until
 * released, cancelled), and the checks a batch client must pass: no request submitted again
 * while a batch that holds it may still answer it.
 */

/** How one request of a batch ends. */
export type RequestFate = 'ok' | 'expired' | 'server_error' | 'bad_request';

export interface BatchPlan {
  /** Stay in progress until release() (a restart of rcb, a cancel). */
  hold?: boolean;
  /** The fate of the request at each index; default every request `ok`. */
  fate?: (index: number) => RequestFate;
}

export type ItemResult =
  | { customId: string; kind: 'ok'; text: string }
  | { customId: string; kind: 'error'; status: number; message: string }
  | { customId: string; kind: 'expired' | 'cancelled' };

export interface FakeBatch {
  id: string;
  /** The provider's request bodies, by custom id, as received. */
  requests: Array<{ customId: string; body: any }>;
  state: 'in_progress' | 'canceling' | 'ended';
  endedAs?: 'completed' | 'expired' | 'cancelled';
  results: ItemResult[];
  polls: number;
}

/** Usage every answer reports (each server maps it to its own field names). */
export const FAKE_USAGE = { input: 1000, output: 100 };

export class FakeBatchBackend {
  readonly batches: FakeBatch[] = [];
  /** Custom ids submitted while a batch holding them was still in progress (must stay empty). */
  readonly resubmittedWhilePending: string[] = [];
  /** Scenario of each new batch, in order; afterwards every batch completes at once. */
  plans: BatchPlan[] = [];
  /** Interactive requests served (the chat endpoint of the same fake), for mode comparisons. */
  interactiveCalls = 0;

  constructor(
    /** The answer to a prompt's text. */
    readonly answer: (prompt: string) => string,
    /** The prompt text of one request body in the provider's format. */
    private readonly promptOf: (body: any) => string,
  ) {}

  create(requests: Array<{ customId: string; body: any }>): FakeBatch {
    const open = new Set(this.batches.filter((b) => b.state !== 'ended').flatMap((b) => b.requests.map((r) => r.customId)));
    for (const r of requests) if (open.has(r.customId)) this.resubmittedWhilePending.push(r.customId);
    const plan = this.plans.shift() ?? {};
    const batch: FakeBatch = { id: `batch_${this.batches.length + 1}`, requests, state: 'in_progress', results: [], polls: 0 };
    (batch as FakeBatch & { plan: BatchPlan }).plan = plan;
    this.batches.push(batch);
    return batch;
  }

  /** A batch by its id, or by a provider's resource name ending in it (Gemini's `batches/<id>`, Bedrock's job ARN). */
  find(id: string): FakeBatch | undefined {
    return this.batches.find((x) => x.id === id || id.endsWith(`/${x.id}`));
  }

  get(id: string): FakeBatch | undefined {
    const b = this.find(id);
    if (!b) return undefined;
    b.polls++;
    const plan = (b as FakeBatch & { plan: BatchPlan }).plan;
    if (b.state === 'in_progress' && !plan.hold) this.finish(b, plan);
    return b;
  }

  /** End a held batch as its plan says. */
  release(id: string): void {
    const b = this.find(id)!;
    const plan = (b as FakeBatch & { plan: BatchPlan }).plan;
    plan.hold = false;
    if (b.state === 'in_progress') this.finish(b, plan);
  }

  /** A cancel: the first half of the requests were answered before it, the rest are cancelled. */
  cancel(id: string): FakeBatch | undefined {
    const b = this.find(id);
    if (!b || b.state === 'ended') return b;
    const half = Math.ceil(b.requests.length / 2);
    b.results = b.requests.map((r, i) => (i < half ? this.ok(r) : { customId: r.customId, kind: 'cancelled' as const }));
    b.state = 'ended';
    b.endedAs = 'cancelled';
    return b;
  }

  private finish(b: FakeBatch, plan: BatchPlan): void {
    const fate = plan.fate ?? (() => 'ok' as RequestFate);
    b.results = b.requests.map((r, i) => {
      switch (fate(i)) {
        case 'ok':
          return this.ok(r);
        case 'expired':
          return { customId: r.customId, kind: 'expired' as const };
        case 'server_error':
          return { customId: r.customId, kind: 'error' as const, status: 500, message: 'internal error' };
        case 'bad_request':
          return { customId: r.customId, kind: 'error' as const, status: 400, message: 'invalid request: max_tokens is too large' };
      }
    });
    b.state = 'ended';
    b.endedAs = b.results.some((r) => r.kind === 'expired') ? 'expired' : 'completed';
  }

  private ok(r: { customId: string; body: any }): ItemResult {
    return { customId: r.customId, kind: 'ok', text: this.answer(this.promptOf(r.body)) };
  }

  /** Requests submitted in all, over every batch. */
  submittedRequests(): number {
    return this.batches.reduce((a, b) => a + b.requests.length, 0);
  }
}
