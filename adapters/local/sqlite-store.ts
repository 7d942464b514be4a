/**
 * RunStore on SQLite (better-sqlite3), one file in the run directory. WAL journal: a killed
 * process loses at most the write in progress, and every write is first-wins, so resuming
 * repeats nothing.
 */
import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { CompletionCache, RunStore } from '../../core/store';
import type { CompletionRecord, PaperEnvironment, RunEnvironment, RunRecord, RunStatus, TaskRecord, Verdict } from '../../core/records';
import type { EnvironmentChecks, RunPaperEnvironment } from '../../core/cloud/ports';

/**
 * A store file that cannot be read as one: not SQLite at all, damaged pages, another
 * program's database, or a row that is not the JSON rcb wrote. The message names the file;
 * the command line prints it as one line (docs/running-locally.md, "Exit codes").
 */
export class StoreFileError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = 'StoreFileError';
  }
}

/** SQLite's answers that mean the file is not (or no longer) a database this store can read. */
function damageReason(e: unknown): string | null {
  const code = (e as { code?: unknown }).code;
  const message = e instanceof Error ? e.message : String(e);
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return null;
  if (code === 'SQLITE_NOTADB') return 'not an SQLite database (damaged, or not an rcb run store)';
  if (code.startsWith('SQLITE_CORRUPT')) return `the SQLite database is damaged (${message})`;
  if (/no such (table|column)/.test(message)) return `not an rcb store of this version (${message})`;
  return null;
}

/** A prepared statement whose damage errors name the file. */
interface GuardedStatement {
  run(...params: unknown[]): Database.RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/**
 * A SQLite file opened the way both stores need it, with its statements prepared once: the
 * per-task writes run on the hot path of a run. An existing file is checked first: one that
 * holds tables but not `requiredTable` is another program's and is refused, not written to.
 */
class SqliteFile {
  readonly db: Database.Database;
  private readonly statements = new Map<string, GuardedStatement>();

  constructor(
    readonly path: string,
    schema: string,
    requiredTable: string,
    readonly readOnly = false,
  ) {
    const found = existsSync(path) ? statSync(path) : null;
    if (found?.isDirectory()) throw new StoreFileError(path, 'a folder, not an rcb store (a file)');
    const existed = !!found && found.size > 0;
    // A reader never creates a store, nor writes a schema into an empty file (docs/running-locally.md).
    if (readOnly && !existed) throw new StoreFileError(path, found ? 'an empty file, not an rcb store' : 'no such file');
    this.db = this.guard(() => new Database(path, { readonly: readOnly, fileMustExist: readOnly }));
    try {
      this.guard(() => {
        if (existed) {
          const tables = (this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((t) => t.name);
          if (!tables.includes(requiredTable)) {
            throw new StoreFileError(
              path,
              `an SQLite database, but not an rcb store (no table "${requiredTable}"; its tables: ${tables.join(', ') || 'none'})`,
            );
          }
        }
        this.db.pragma('busy_timeout = 5000');
        if (readOnly) return;
        this.db.pragma('journal_mode = WAL');
        this.db.pragma('synchronous = NORMAL');
        this.db.exec(schema);
      });
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  /** `fn`, with SQLite's damage errors turned into a StoreFileError naming the file. */
  guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      const reason = damageReason(e);
      if (reason) throw new StoreFileError(this.path, reason);
      throw e;
    }
  }

  prepare(sql: string): GuardedStatement {
    let statement = this.statements.get(sql);
    if (!statement) {
      const raw = this.guard(() => this.db.prepare(sql));
      statement = {
        run: (...p) => this.guard(() => raw.run(...p)),
        get: (...p) => this.guard(() => raw.get(...p)),
        all: (...p) => this.guard(() => raw.all(...p)),
      };
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** `fn` in one transaction, guarded like the statements. */
  transaction<T>(fn: () => T): T {
    return this.guard(() => this.db.transaction(fn)());
  }

  /** A stored record read back; text that is not JSON is damage, named with its table. */
  parse<T>(text: string, table: string): T {
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new StoreFileError(this.path, `a row of table "${table}" is not the JSON rcb wrote (the file is damaged)`);
    }
  }
}

const COMPLETIONS_TABLE = 'CREATE TABLE IF NOT EXISTS completions (task_id TEXT PRIMARY KEY, record TEXT NOT NULL)';
const GET_COMPLETION = 'SELECT record FROM completions WHERE task_id = ?';
const PUT_COMPLETION = 'INSERT OR IGNORE INTO completions (task_id, record) VALUES (?, ?)';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  record TEXT NOT NULL,
  status TEXT NOT NULL,
  budget_usd REAL,
  spent_usd REAL NOT NULL DEFAULT 0,
  reserved_usd REAL NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL,
  error TEXT
);
CREATE TABLE IF NOT EXISTS tasks (
  run_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  paper TEXT NOT NULL,
  file TEXT NOT NULL,
  snippet TEXT NOT NULL,
  loc INTEGER NOT NULL,
  model TEXT NOT NULL,
  sample INTEGER NOT NULL,
  PRIMARY KEY (run_id, task_id)
);
${COMPLETIONS_TABLE};
CREATE TABLE IF NOT EXISTS verdicts (
  run_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (run_id, task_id)
);
CREATE TABLE IF NOT EXISTS generation_claims (
  task_id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  claim_until INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS image_checks (
  image TEXT NOT NULL,
  paper_digest TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (image, paper_digest)
);
CREATE TABLE IF NOT EXISTS image_check_claims (
  image TEXT NOT NULL,
  paper_digest TEXT NOT NULL,
  owner TEXT NOT NULL,
  claim_until INTEGER NOT NULL,
  PRIMARY KEY (image, paper_digest)
);
CREATE TABLE IF NOT EXISTS run_paper_environments (
  run_id TEXT NOT NULL,
  paper TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (run_id, paper)
);
`;

/** Tolerance for float sums of dollar amounts when comparing with the budget. */
const EPSILON = 1e-9;

export interface SqliteRunStoreOptions {
  /** Clock of generation claims. @default () => new Date() */
  now?: () => Date;
  /** Open for reading only: the file must be an rcb store already, and nothing is written to it. @default false */
  readOnly?: boolean;
}

/** Also the cloud's environment checks (core/cloud/ports.ts), as DynamoEnvironmentChecks keeps them on the run table. */
export class SqliteRunStore implements RunStore, EnvironmentChecks {
  private readonly file: SqliteFile;
  private readonly now: () => Date;

  constructor(path: string, options: SqliteRunStoreOptions = {}) {
    this.now = options.now ?? (() => new Date());
    this.file = new SqliteFile(path, SCHEMA, 'runs', options.readOnly ?? false);
  }

  async createRun(run: RunRecord): Promise<RunRecord> {
    this.file
      .prepare(
        `INSERT OR IGNORE INTO runs (run_id, record, status, budget_usd, spent_usd, reserved_usd, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(run.runId, JSON.stringify(run), run.status, run.spec.budgetUsd, run.spentUsd, run.reservedUsd, run.updatedAt);
    return (await this.getRun(run.runId))!;
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const row = this.file.prepare('SELECT * FROM runs WHERE run_id = ?').get(runId) as
      | { record: string; status: RunStatus; budget_usd: number | null; spent_usd: number; reserved_usd: number; updated_at: string; error: string | null }
      | undefined;
    if (!row) return null;
    const run = this.file.parse<RunRecord>(row.record, 'runs');
    run.status = row.status;
    run.spec.budgetUsd = row.budget_usd;
    run.spentUsd = row.spent_usd;
    run.reservedUsd = row.reserved_usd;
    run.updatedAt = row.updated_at;
    if (row.error) run.error = row.error;
    else delete run.error;
    return run;
  }

  async setRunStatus(runId: string, status: RunStatus, error?: string): Promise<void> {
    this.file.prepare('UPDATE runs SET status = ?, error = ?, updated_at = ? WHERE run_id = ?').run(status, error ?? null, new Date().toISOString(), runId);
  }

  async setRunBudget(runId: string, budgetUsd: number | null): Promise<void> {
    this.file.prepare('UPDATE runs SET budget_usd = ? WHERE run_id = ?').run(budgetUsd, runId);
  }

  async setRunEnvironment(runId: string, environment: RunEnvironment | null): Promise<void> {
    if (environment === null) this.file.prepare("UPDATE runs SET record = json_remove(record, '$.environment') WHERE run_id = ?").run(runId);
    else this.file.prepare("UPDATE runs SET record = json_set(record, '$.environment', json(?)) WHERE run_id = ?").run(JSON.stringify(environment), runId);
  }

  async putTasks(runId: string, tasks: TaskRecord[]): Promise<void> {
    const insert = this.file.prepare(
      `INSERT OR IGNORE INTO tasks (run_id, task_id, seq, paper, file, snippet, loc, model, sample)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const start = (this.file.prepare('SELECT COUNT(*) AS n FROM tasks WHERE run_id = ?').get(runId) as { n: number }).n;
    this.file.transaction(() => {
      tasks.forEach((t, i) => insert.run(runId, t.taskId, start + i, t.paper, t.file, t.snippet, t.loc, t.model, t.sample));
    });
  }

  async listTasks(runId: string): Promise<TaskRecord[]> {
    const rows = this.file.prepare('SELECT task_id, paper, file, snippet, loc, model, sample FROM tasks WHERE run_id = ? ORDER BY seq').all(runId) as {
      task_id: string;
      paper: string;
      file: string;
      snippet: string;
      loc: number;
      model: string;
      sample: number;
    }[];
    return rows.map((r) => ({ taskId: r.task_id, paper: r.paper, file: r.file, snippet: r.snippet, loc: r.loc, model: r.model, sample: r.sample }));
  }

  async putCompletion(c: CompletionRecord): Promise<boolean> {
    return this.file.prepare('INSERT OR IGNORE INTO completions (task_id, record) VALUES (?, ?)').run(c.taskId, JSON.stringify(c)).changes === 1;
  }

  async getCompletions(taskIds: string[]): Promise<Map<string, CompletionRecord>> {
    const out = new Map<string, CompletionRecord>();
    const get = this.file.prepare(GET_COMPLETION);
    for (const id of taskIds) {
      const row = get.get(id) as { record: string } | undefined;
      if (row) out.set(id, this.file.parse<CompletionRecord>(row.record, 'completions'));
    }
    return out;
  }

  async reopenTask(runId: string, taskId: string): Promise<boolean> {
    return this.file.transaction(() => {
      const row = this.file.prepare(GET_COMPLETION).get(taskId) as { record: string } | undefined;
      if (!row || !this.file.parse<CompletionRecord>(row.record, 'completions').error) return false;
      this.file.prepare('DELETE FROM completions WHERE task_id = ?').run(taskId);
      this.file.prepare('DELETE FROM verdicts WHERE run_id = ? AND task_id = ?').run(runId, taskId);
      return true;
    });
  }

  async putVerdict(runId: string, v: Verdict): Promise<boolean> {
    return this.file.prepare('INSERT OR IGNORE INTO verdicts (run_id, task_id, record) VALUES (?, ?, ?)').run(runId, v.taskId, JSON.stringify(v)).changes === 1;
  }

  async listVerdicts(runId: string): Promise<Verdict[]> {
    const rows = this.file.prepare('SELECT record FROM verdicts WHERE run_id = ?').all(runId) as { record: string }[];
    return rows.map((r) => this.file.parse<Verdict>(r.record, 'verdicts'));
  }

  async getVerdicts(runId: string, taskIds: string[]): Promise<Map<string, Verdict>> {
    const get = this.file.prepare('SELECT record FROM verdicts WHERE run_id = ? AND task_id = ?');
    const out = new Map<string, Verdict>();
    for (const id of taskIds) {
      const row = get.get(runId, id) as { record: string } | undefined;
      if (row) out.set(id, this.file.parse<Verdict>(row.record, 'verdicts'));
    }
    return out;
  }

  async reserveBudget(runId: string, usd: number): Promise<boolean> {
    const res = this.file
      .prepare(
        `UPDATE runs SET reserved_usd = reserved_usd + ?
         WHERE run_id = ? AND (budget_usd IS NULL OR spent_usd + reserved_usd + ? <= budget_usd + ${EPSILON})`,
      )
      .run(usd, runId, usd);
    return res.changes === 1;
  }

  async settleBudget(runId: string, reservedUsd: number, actualUsd: number): Promise<void> {
    this.file.prepare('UPDATE runs SET reserved_usd = MAX(0, reserved_usd - ?), spent_usd = spent_usd + ? WHERE run_id = ?').run(reservedUsd, actualUsd, runId);
  }

  async clearReservations(runId: string): Promise<void> {
    this.file.prepare('UPDATE runs SET reserved_usd = 0 WHERE run_id = ?').run(runId);
  }

  async claimGeneration(taskId: string, owner: string, leaseMs: number): Promise<boolean> {
    // One statement: insert, or take over a claim that has expired or is already ours. When
    // the WHERE of the upsert is false nothing changes and `changes` is 0.
    const now = this.now().getTime();
    const res = this.file
      .prepare(
        `INSERT INTO generation_claims (task_id, owner, claim_until) VALUES (?, ?, ?)
         ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner, claim_until = excluded.claim_until
         WHERE generation_claims.claim_until < ? OR generation_claims.owner = excluded.owner`,
      )
      .run(taskId, owner, now + leaseMs, now);
    return res.changes === 1;
  }

  async releaseGeneration(taskId: string, owner: string): Promise<void> {
    this.file.prepare('DELETE FROM generation_claims WHERE task_id = ? AND owner = ?').run(taskId, owner);
  }

  async getImageCheck(image: string, paperDigest: string): Promise<PaperEnvironment | null> {
    const row = this.file.prepare('SELECT record FROM image_checks WHERE image = ? AND paper_digest = ?').get(image, paperDigest) as
      | { record: string }
      | undefined;
    return row ? this.file.parse<PaperEnvironment>(row.record, 'image_checks') : null;
  }

  async putImageCheck(image: string, paperDigest: string, result: PaperEnvironment): Promise<void> {
    this.file.prepare('INSERT OR IGNORE INTO image_checks (image, paper_digest, record) VALUES (?, ?, ?)').run(image, paperDigest, JSON.stringify(result));
  }

  async claimImageCheck(image: string, paperDigest: string, owner: string, leaseMs: number): Promise<boolean> {
    const now = this.now().getTime();
    const res = this.file
      .prepare(
        `INSERT INTO image_check_claims (image, paper_digest, owner, claim_until) VALUES (?, ?, ?, ?)
         ON CONFLICT (image, paper_digest) DO UPDATE SET owner = excluded.owner, claim_until = excluded.claim_until
         WHERE image_check_claims.claim_until < ? OR image_check_claims.owner = excluded.owner`,
      )
      .run(image, paperDigest, owner, now + leaseMs, now);
    return res.changes === 1;
  }

  async putRunPaperEnvironment(runId: string, result: RunPaperEnvironment): Promise<void> {
    this.file
      .prepare('INSERT OR REPLACE INTO run_paper_environments (run_id, paper, record) VALUES (?, ?, ?)')
      .run(runId, result.paper, JSON.stringify(result));
  }

  async listRunPaperEnvironments(runId: string): Promise<RunPaperEnvironment[]> {
    const rows = this.file.prepare('SELECT record FROM run_paper_environments WHERE run_id = ? ORDER BY paper').all(runId) as { record: string }[];
    return rows.map((r) => this.file.parse<RunPaperEnvironment>(r.record, 'run_paper_environments'));
  }

  async close(): Promise<void> {
    this.file.db.close();
  }
}

/**
 * Completions of paid models shared by every run on this machine, so that the same task
 * (same id: same pset content, model, parameters, prompt and sample) is never bought twice.
 */
export class SqliteCompletionCache implements CompletionCache {
  private readonly file: SqliteFile;

  constructor(path: string) {
    this.file = new SqliteFile(path, COMPLETIONS_TABLE, 'completions');
  }

  async get(taskId: string): Promise<CompletionRecord | null> {
    const row = this.file.prepare(GET_COMPLETION).get(taskId) as { record: string } | undefined;
    return row ? this.file.parse<CompletionRecord>(row.record, 'completions') : null;
  }

  async put(c: CompletionRecord): Promise<void> {
    this.file.prepare(PUT_COMPLETION).run(c.taskId, JSON.stringify(c));
  }

  close(): void {
    this.file.db.close();
  }
}
