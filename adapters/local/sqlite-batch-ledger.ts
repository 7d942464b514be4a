/**
 * The BatchLedger on SQLite, in the run directory's rcb.sqlite next to the run store: a
 * batch is recorded before it is submitted and at each change after, so that rcb killed
 * while a batch is pending finds it again and polls it.
 */
import Database from 'better-sqlite3';
import type { BatchLedger, BatchRecord } from '../../core/batch';

export class SqliteBatchLedger implements BatchLedger {
  private readonly db: Database.Database;

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec('CREATE TABLE IF NOT EXISTS batches (batch_key TEXT PRIMARY KEY, run_id TEXT NOT NULL, seq INTEGER NOT NULL, record TEXT NOT NULL)');
  }

  async putBatch(b: BatchRecord): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO batches (batch_key, run_id, seq, record) VALUES (?, ?, (SELECT COUNT(*) FROM batches), ?)
         ON CONFLICT (batch_key) DO UPDATE SET record = excluded.record`,
      )
      .run(b.batchKey, b.runId, JSON.stringify(b));
  }

  async listBatches(runId: string): Promise<BatchRecord[]> {
    const rows = this.db.prepare('SELECT record FROM batches WHERE run_id = ? ORDER BY seq').all(runId) as { record: string }[];
    return rows.map((r) => JSON.parse(r.record) as BatchRecord);
  }

  close(): void {
    this.db.close();
  }
}
