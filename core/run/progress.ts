/** How long work reports progress; the CLI draws a bar on a TTY and prints lines otherwise. */
export interface Progress {
  start(phase: string, total: number): void;
  advance(phase: string, n?: number, detail?: string): void;
  end(phase: string): void;
  note(message: string): void;
}

export const silentProgress: Progress = {
  start() {},
  advance() {},
  end() {},
  note() {},
};
