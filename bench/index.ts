/**
 * `npm run bench -- <name> [args]`: runs the benchmark exported by bench/<name>.ts.
 * Each bench module is loaded only when asked for, so one that is missing or broken does
 * not stop the others.
 */

type Bench = (args: string[]) => Promise<void>;

const BENCHES: Record<string, { module: string; exported: string; help: string }> = {
  evaluation: {
    module: './evaluation',
    exported: 'benchEvaluation',
    help: 'original loop, cold, warm 1 and N jobs and the floor, in rounds [--pset DIR] [--papers ID... | --preset debian9] [--python PATH] [--rounds R] [--repeat N] [--jobs N] [--sandbox auto|bwrap|uid|none] [--only original,cold,warm1,warmN,floor]; prints where the time goes',
  },
  report: {
    module: './report',
    exported: 'benchReport',
    help: 'scoring with bootstrap intervals, the table and the HTML report of a synthetic full sweep [--models N] [--tasks N] [--samples N] [--repeat N]',
  },
  plan: {
    module: './plan',
    exported: 'benchPlan',
    help: 'PlanRun pricing of a 10-model x 5-sample sweep of the 20-paper set [--pset DIR] [--models a,b] [--samples N] [--slice N]',
  },
  generation: {
    module: './generation',
    exported: 'benchGeneration',
    help: 'generation throughput under a rate limit',
  },
  'check-progress': {
    module: './check-progress',
    exported: 'benchCheckProgress',
    help: "CheckProgress's wave planning at rcb:maxShards against dynalite: time, heap and read units per check [--shards N] [--tasks N]",
  },
  sweep: {
    module: './sweep',
    exported: 'benchSweep',
    help: 'a 3-model x 2-sample sweep over pset-mini, interactive vs batch: cost (registry prices), requests, state transitions [--samples N] [--papers a,b]',
  },
};

function usage(): string {
  return ['usage: npm run bench -- <name> [args]', ...Object.entries(BENCHES).map(([n, b]) => `  ${n.padEnd(12)} ${b.help}`)].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const bench = name ? BENCHES[name] : undefined;
  if (!bench) {
    process.stderr.write(`${name ? `rcb bench: unknown bench ${JSON.stringify(name)}\n` : ''}${usage()}\n`);
    return 2;
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require(bench.module) as Record<string, unknown>;
  const run = loaded[bench.exported];
  if (typeof run !== 'function') {
    process.stderr.write(`rcb bench: ${bench.module} does not export ${bench.exported}\n`);
    return 2;
  }
  await (run as Bench)(args);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
