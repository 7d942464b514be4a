/** The flags of `rcb cloud run` (deployed or `--emulate`), and the run they define. */
import { MAX_DEADLINE_SEC, type BatchSettings } from '../../../core/cloud/payloads';
import type { HostedModels } from '../../../adapters/models/hosted-models';
import { refuseUnbuildableModels } from '../../../app/cloud-run';
import type { LocalRunFlags } from '../local-run-cli';
import { resolveRun, type ResolvedRun, type RunSpecFlags } from '../resolve-run';
import type { StackFlags } from './stack-flags';
import { UsageError } from '../common';

export interface CloudRunOptions extends RunSpecFlags, LocalRunFlags, StackFlags {
  modelsFile?: string;
  batch?: boolean;
  detach?: boolean;
  force?: boolean;
  /** `--deadline`: how long generation may run, e.g. `36h`, `90m` (at most 48 h). @default the stack's (24 h) */
  deadline?: string;
  emulate?: boolean;
  /** `--skip-doctor`: start without `rcb cloud doctor`'s check of the account's quotas. */
  skipDoctor?: boolean;
  /** Folder of the emulated cloud's state (--emulate). @default ~/.rcb/emulator */
  stateDir?: string;
  emulateDeliverTwice?: boolean;
  emulateFailShardOnce?: boolean;
  /** Models for the workflow's batch lane, as a sweep's mode batch names them (`--batch` takes every registry model). */
  batchSettings?: BatchSettings;
}

/** The run of the flags, refused when a model is one the cloud cannot rebuild from the spec. */
export function resolveCloudRun(opts: CloudRunOptions, hosted: HostedModels): ResolvedRun {
  return refuseUnbuildableModels(resolveRun(opts, hosted), hosted);
}

const UNIT_SEC: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * `--deadline DURATION` in seconds: a number and a unit (`s`, `m`, `h`, `d`; `36h`, `90m`,
 * `1d12h`), whole seconds, at most MAX_DEADLINE_SEC (48 h: the execution's 3-day timeout less
 * a day for evaluation). The error names the flag.
 */
export function parseDeadlineSec(value: string, flag = '--deadline'): number {
  const text = value.trim().toLowerCase();
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)\s*([smhd])/g)];
  const whole = parts.map((m) => m[0]).join('');
  if (!parts.length || whole.replace(/\s+/g, '') !== text.replace(/\s+/g, '')) {
    throw new UsageError(`${flag} must be a duration such as 36h, 90m or 1d12h (got "${value}")`);
  }
  const sec = Math.round(parts.reduce((n, m) => n + Number(m[1]) * UNIT_SEC[m[2]], 0));
  if (sec < 60) throw new UsageError(`${flag} must be at least 1m (got "${value}")`);
  if (sec > MAX_DEADLINE_SEC) {
    throw new UsageError(
      `${flag} must be at most ${MAX_DEADLINE_SEC / 3600}h, the longest generation a run may have (got "${value}", ${(sec / 3600).toFixed(1)}h)`,
    );
  }
  return sec;
}

/** The run's own generation deadline from `--deadline`, or none (the stack's applies). */
export function deadlineOf(opts: Pick<CloudRunOptions, 'deadline'>): { deadlineSec?: number } {
  return opts.deadline === undefined ? {} : { deadlineSec: parseDeadlineSec(opts.deadline) };
}
