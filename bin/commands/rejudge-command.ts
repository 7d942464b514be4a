/** `rcb rejudge RUN_DIR`: rescore a stored run with today's judge, running no test. */
import { resolve } from 'node:path';
import { buildReport } from '../../core/report/build-report';
import { rejudgeRun, withVerdicts } from '../../core/rejudge';
import { asUsageError, openRunDir, parseReportFlags, UsageError } from './common';

export async function rejudgeCommand(runDir: string, opts: { format: string; judge?: string; subset: string }): Promise<number> {
  const flags = parseReportFlags(opts);
  const { store, runId } = openRunDir(runDir, false);
  try {
    if (!runId) throw new UsageError(`${resolve(runDir)} has no run.json`);
    const run = await store.getRun(runId);
    if (!run) throw new UsageError(`no run ${runId} in ${resolve(runDir)}`);
    if (run.source === 'import') throw new UsageError('this run was imported from overall_stats.json: its results carry no test evidence to judge again');
    const result = await rejudgeRun(store, runId);
    const { text } = await buildReport(withVerdicts(store, result.verdicts), runId, flags).catch((e: unknown) => {
      throw asUsageError(e);
    });
    process.stdout.write(text);
    process.stderr.write(
      `rejudged ${result.rejudged} verdict(s) from their evidence, no test run (${result.changed} changed); ${result.kept} kept as stored` +
        ' (no test run behind them, or written before verdicts kept evidence)\n',
    );
    if (result.untestedNoCode) {
      process.stderr.write(
        `note: ${result.untestedNoCode} answer(s) without code were failed by an older rcb without running their test; ` +
          'the official judge now runs it (the original harness did): run the benchmark again in a new --out to test them\n',
      );
    }
    return 0;
  } finally {
    await store.close();
  }
}
