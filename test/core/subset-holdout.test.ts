/**
 * `rcb subset check --holdout`: the strongest or the newest published models held out
 * together, the subset fitted on the rest. The figures are docs/subsets.md's (extrapolation).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { importOverallStats } from '../../core/report/official';
import { verdictMatrix } from '../../core/subset/matrix';
import { checkHoldout, heldOutRows, parseHoldout } from '../../core/subset/holdout';
import { REAL_PSET } from '../helpers/shared-data';

const PUBLISHED = join(REAL_PSET, '..', 'outputs', '20llms_greedy', '2025-05-12-17-13-20', 'overall_stats.json');
const present = existsSync(PUBLISHED);
if (!present && !process.env.CI) console.warn(`SKIPPED test/core/subset-holdout.test.ts: no published verdicts at ${PUBLISHED}`);

it('reads strongest:N and newest:N, and refuses anything else naming the flag', () => {
  expect(parseHoldout('strongest:5')).toEqual({ kind: 'strongest', n: 5 });
  expect(parseHoldout('newest:3')).toEqual({ kind: 'newest', n: 3 });
  expect(() => parseHoldout('oldest:5')).toThrow('--holdout oldest:5: must be strongest:N or newest:N');
});

(present || process.env.CI ? describe : describe.skip)('holdout splits of the 32 published models', () => {
  const imported = () => importOverallStats(readFileSync(PUBLISHED, 'utf8'), PUBLISHED);
  const load = () => verdictMatrix([{ source: PUBLISHED, imported: imported() }]);
  const cutoffs = () => Object.fromEntries(Object.entries(imported().run.models).map(([id, i]) => [id, i.knowledgeCutoff]));

  it('holds out the five strongest, and the five newest by cutoff', () => {
    const m = load();
    expect(heldOutRows(m, { kind: 'strongest', n: 5 }, {}).map((i) => m.models[i])).toEqual([
      'GEMINI_2_5_PRO_PREVIEW_05_06',
      'GEMINI_2_5_PRO_PREVIEW_03_25',
      'O3_HIGH',
      'OPENROUTER_O4_MINI_HIGH',
      'GPT_4_1',
    ]);
    expect(heldOutRows(m, { kind: 'newest', n: 5 }, cutoffs()).map((i) => m.models[i])).toEqual([
      'GEMINI_2_5_FLASH_PREVIEW_04_17',
      'GEMINI_2_5_PRO_PREVIEW_03_25',
      'GEMINI_2_5_PRO_PREVIEW_05_06',
      'CLAUDE_3_7_SONNET_2025_02_19',
      'GROK_3_BETA',
    ]);
  });

  it('estimates them from a subset fitted without them, with the figures docs/subsets.md reports', () => {
    const m = load();
    const strongest = checkHoldout(m, { kind: 'strongest', n: 5 }, 40, 0, {});
    const newest = checkHoldout(m, { kind: 'newest', n: 5 }, 40, 0, cutoffs());
    // As measured (docs/subsets.md#extrapolation): the method shrinks the strongest towards the middle.
    expect([strongest.summary.mae.toFixed(2), strongest.summary.max.toFixed(2)]).toEqual(['3.61', '6.92']);
    expect([newest.summary.mae.toFixed(2), newest.summary.max.toFixed(2)]).toEqual(['1.93', '4.46']);
    expect(strongest.goals).toEqual({ within4: false, mae2: false, inside: false });
    expect(newest.goals).toEqual({ within4: false, mae2: true, inside: true });
  });
});
