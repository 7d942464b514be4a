#!/usr/bin/env node
/**
 * The CDK app: `npx cdk synth` / `npx cdk deploy`. Configuration comes from cdk.json
 * context (`rcb:*` keys, overridable with `-c key=value`); no AWS credentials are needed
 * to synthesize, and the stack is environment-agnostic unless rcb:account / rcb:region are set.
 */
import { App } from 'aws-cdk-lib';
import { configFromContext } from '../infra/config';
import { applyNagPacks } from '../infra/nag-packs';
import { RcbStack, stackPropsFromConfig } from '../infra/rcb-stack';

const app = new App();
const config = configFromContext(app.node);
new RcbStack(app, config.stackName, stackPropsFromConfig(config));
applyNagPacks(app);
app.synth();
