/**
 * The emulator's EventBridge Scheduler: schedules kept in the state folder (`schedules.json`),
 * each with the workflow input its firing starts the run workflow with. Nothing fires on a
 * clock here: `fireSchedule` takes a schedule's stored input, as Scheduler's target would.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ScheduleInputError, scheduleInputText, type RunSchedule, type RunScheduler } from '../core/cloud/run-schedules';

export class FileRunScheduler implements RunScheduler {
  private readonly file: string;
  constructor(stateDir: string) {
    mkdirSync(stateDir, { recursive: true });
    this.file = join(stateDir, 'schedules.json');
  }

  private read(): RunSchedule[] {
    return existsSync(this.file) ? (JSON.parse(readFileSync(this.file, 'utf8')) as RunSchedule[]) : [];
  }

  private write(schedules: RunSchedule[]): void {
    writeFileSync(`${this.file}.tmp`, JSON.stringify(schedules, null, 2));
    renameSync(`${this.file}.tmp`, this.file);
  }

  async create(s: RunSchedule): Promise<void> {
    // The target's input as Scheduler keeps it: a text, refused past its limit.
    const input = JSON.parse(scheduleInputText(s.input));
    const all = this.read();
    if (all.some((x) => x.name === s.name)) throw new ScheduleInputError(`a schedule named ${s.name} exists: remove it first`);
    this.write([...all, { ...s, input }]);
  }

  async list(): Promise<RunSchedule[]> {
    return this.read().sort((a, b) => a.name.localeCompare(b.name));
  }

  async remove(name: string): Promise<boolean> {
    const all = this.read();
    const kept = all.filter((x) => x.name !== name);
    this.write(kept);
    return kept.length !== all.length;
  }
}
