/**
 * The bookkeeping both local executors share: set up once on first use, run a batch of
 * candidates over a pool of slots delivering each result as it comes, track what is in
 * flight, and on close abort it, wait for it and remove the run directory. Also the
 * RawExecution of a finished run and of one the executor could not run.
 */
import { rm } from 'node:fs/promises';
import type { Candidate, RawExecution } from '../../core/executor';
import { parseDriverReport } from './driver-report';
import { releaseSandboxUsers, type SandboxUser } from './sandbox-users';
import type { SlotPool } from './slot-pool';
import type { TestProcessOutcome } from './test-process';

type ExecutorKind = RawExecution['executor'];
type OnResult = (r: RawExecution) => void | Promise<void>;

/** What the lifecycle needs of an executor's set-up: the run directory, the sandbox, the slot users. */
interface Setup {
  runDir: string;
  kind: RawExecution['sandbox'];
  users: readonly SandboxUser[];
}

export class ExecutorLifecycle<Prepared extends Setup> {
  /** Aborted on close: kills whatever test is running. */
  readonly abort = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();
  private prepared: Promise<Prepared> | undefined;
  private isClosed = false;

  constructor(
    private readonly kind: ExecutorKind,
    private readonly setUp: () => Promise<Prepared>,
  ) {}

  get closed(): boolean {
    return this.isClosed;
  }

  /** The set-up, started on the first call; rejects once closed. */
  prepare(): Promise<Prepared> {
    if (this.isClosed) return Promise.reject(new Error('rcb: the executor is closed'));
    this.prepared ??= this.setUp();
    return this.prepared;
  }

  /** A batch of candidates of one `run` call; those that never run get an infraError. */
  batch(setup: Prepared, candidates: readonly Candidate[], onResult?: OnResult): RunBatch {
    return new RunBatch(this, candidates, onResult, (candidate) => this.failed(setup, candidate, NOT_RUN_MESSAGE));
  }

  /** The RawExecution of a test that ran to its end (or was killed). */
  finished(setup: Prepared, candidate: Candidate, outcome: TestProcessOutcome, tamperedFiles: string[]): RawExecution {
    return {
      taskId: candidate.taskId,
      exitCode: outcome.exitCode,
      signal: outcome.signal,
      durationMs: outcome.durationMs,
      killedFor: outcome.killedFor,
      stdout: outcome.stdout,
      stderr: outcome.stderr,
      markersSeen: outcome.markersSeen,
      driver: parseDriverReport(outcome.report),
      tamperedFiles,
      sandbox: setup.kind,
      executor: this.kind,
      ...(this.isClosed ? { infraError: 'rcb: the executor was closed while this candidate ran' } : {}),
    };
  }

  /**
   * The RawExecution of a candidate the executor failed to run (`reason`: a message or
   * what was thrown): not a verdict on the candidate.
   */
  failed(setup: Prepared, candidate: Candidate, reason: unknown): RawExecution {
    const empty = { text: '', totalBytes: 0, truncated: false };
    return {
      taskId: candidate.taskId,
      exitCode: null,
      signal: null,
      durationMs: 0,
      killedFor: null,
      stdout: empty,
      stderr: { ...empty },
      markersSeen: [],
      driver: null,
      tamperedFiles: [],
      sandbox: setup.kind,
      executor: this.kind,
      infraError: reason instanceof Error ? reason.message : String(reason),
    };
  }

  /** Waits for it on close. */
  track(promise: Promise<unknown>): void {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise)).catch(() => undefined);
  }

  /** Aborts and waits for what is in flight, then `release`, then removes the run directory and gives the users back. */
  async close(release?: () => Promise<unknown>): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.abort.abort();
    await Promise.allSettled([...this.inFlight]);
    await release?.();
    const setup = await this.prepared?.catch(() => undefined);
    if (!setup) return;
    await rm(setup.runDir, { recursive: true, force: true });
    releaseSandboxUsers(setup.users);
  }
}

/**
 * The results of one `run` call, in the candidates' order. A result is handed to
 * `onResult` as it comes; once that throws (the caller could not take the result: saving
 * it failed, say), no more candidates start and the batch rejects with that error.
 */
export class RunBatch {
  readonly results: (RawExecution | undefined)[];
  private callbackFailure: { error: unknown } | undefined;
  private readonly tasks: Promise<void>[] = [];

  constructor(
    private readonly lifecycle: { readonly closed: boolean; track(promise: Promise<unknown>): void },
    private readonly candidates: readonly Candidate[],
    private readonly onResult: OnResult | undefined,
    private readonly notRun: (candidate: Candidate) => RawExecution,
  ) {
    this.results = new Array(candidates.length);
  }

  /** Records the result of candidate `index` and hands it to `onResult`. */
  async deliver(index: number, result: RawExecution): Promise<void> {
    this.results[index] = result;
    if (!this.onResult || this.callbackFailure) return;
    try {
      await this.onResult(result);
    } catch (error) {
      this.callbackFailure ??= { error };
    }
  }

  /** Waits for `task` before the batch ends (and the executor before it closes). */
  add(task: Promise<void>): void {
    this.tasks.push(task);
    this.lifecycle.track(task);
  }

  /**
   * Starts the candidates at `indexes`, each once a slot is free, until the batch fails or
   * the executor closes. Resolves once the last one has started.
   */
  async runInSlots(indexes: Iterable<number>, slots: SlotPool, runOne: (candidate: Candidate, slot: number) => Promise<RawExecution>): Promise<void> {
    for (const i of indexes) {
      const slot = await slots.acquire();
      if (this.callbackFailure || this.lifecycle.closed) {
        slots.release(slot);
        break;
      }
      const task = (async () => {
        let result: RawExecution;
        try {
          result = await runOne(this.candidates[i], slot);
        } finally {
          slots.release(slot);
        }
        await this.deliver(i, result);
      })();
      this.add(task);
    }
  }

  /** Waits for every task; the results in the candidates' order. */
  async finish(): Promise<RawExecution[]> {
    await Promise.all(this.tasks);
    if (this.callbackFailure) throw this.callbackFailure.error;
    return this.candidates.map((candidate, i) => this.results[i] ?? this.notRun(candidate));
  }
}

const NOT_RUN_MESSAGE = 'rcb: the executor was closed before this candidate ran';
