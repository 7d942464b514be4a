import { Aspects, type IAspect } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

/**
 * The cdk-nag packs the app is held to. bin/app.ts and the nag test both call this, so
 * the test checks exactly what `cdk synth` checks.
 */
export function nagPacks(): IAspect[] {
  return [new AwsSolutionsChecks({ verbose: true }), new ServerlessChecks({ verbose: true })];
}

export function applyNagPacks(scope: IConstruct): void {
  for (const pack of nagPacks()) Aspects.of(scope).add(pack);
}
