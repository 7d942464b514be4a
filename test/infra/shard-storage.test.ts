/**
 * The shard task's ephemeral storage follows the image (docs/cloud.md "Shard storage"):
 * Fargate keeps the compressed layers and the unpacked filesystem on it, and the tests'
 * scratch gets what is left.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { configFromContext } from '../../infra/config';
import { MEASURED_IMAGE_SIZE, imageFitsTask, shardEphemeralStorageGiB } from '../../infra/ephemeral-storage';
import { RcbStack, stackPropsFromConfig } from '../../infra/rcb-stack';
import { resourcesOfType, sharedStack, testApp } from './helpers';

const GIB = 2 ** 30;
const taskStorage = (template: Template) => {
  const [task] = Object.values(resourcesOfType(template, 'AWS::ECS::TaskDefinition'));
  return task.Properties?.EphemeralStorage?.SizeInGiB as number | undefined;
};

describe('shard task ephemeral storage', () => {
  it('holds the measured image twice (layers and filesystem) and 16 GiB of scratch', () => {
    const size = taskStorage(sharedStack().template);
    const image = ((MEASURED_IMAGE_SIZE.compressedMB + MEASURED_IMAGE_SIZE.unpackedMB) * 1e6) / GIB;
    expect(size).toBeDefined();
    expect(size! - image).toBeGreaterThanOrEqual(16);
    expect(size).toBe(25);
  });

  it('grows with a declared image (context) and stays in Fargate 21..200 GiB', () => {
    const app = testApp();
    app.node.setContext('rcb:imageUnpackedMB', '20000');
    app.node.setContext('rcb:imageCompressedMB', '9000');
    app.node.setContext('rcb:shardScratchGiB', '30');
    const props = stackPropsFromConfig(configFromContext(app.node));
    const stack = new RcbStack(app, 'RcbBigImage', { analyticsReporting: false, ...props });
    expect(taskStorage(Template.fromStack(stack))).toBe(Math.ceil((29000 * 1e6) / GIB + 30));
    expect(shardEphemeralStorageGiB({ unpackedMB: 100, compressedMB: 50 }, 1)).toBe(21);
    expect(() => shardEphemeralStorageGiB({ unpackedMB: 150_000, compressedMB: 60_000 }, 16)).toThrow('Fargate allows at most 200');
  });

  it('tells image:check what to declare when a measured image outgrows the task', () => {
    expect(imageFitsTask(MEASURED_IMAGE_SIZE.unpackedMB, 25)).toBeNull();
    expect(imageFitsTask(12_000, 25)).toMatch(/need 33 GiB .* has 25: set rcb:imageUnpackedMB=12000 and rcb:imageCompressedMB=5681/);
  });
});
