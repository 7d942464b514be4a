/**
 * What the infrastructure cost depends on, read from a synthesized (or deployed) CloudFormation
 * template: the shard task's size and architecture, the functions' memory, and the resources
 * billed whether or not anything runs (interface endpoints per AZ, alarms, dashboards, queue
 * pollers, secrets, KMS keys). Pure JSON reading; `DEFAULT_STACK_SIZES` is the default stack's,
 * and test/infra/infra-cost.test.ts holds it equal to what the stack synthesizes.
 */

export interface StackSizes {
  shardTask: { vcpu: number; memoryGb: number; architecture: 'X86_64' | 'ARM64' };
  /** Memory of each pipeline function by its rcb directory name (generate, plan-run, ...), MiB. */
  functionMemoryMiB: Record<string, number>;
  /** Per interface endpoint, the AZs (subnets) it has a network interface in. */
  interfaceEndpointAzs: number[];
  alarms: number;
  dashboards: number;
  /** SQS event source mappings: each keeps Lambda's pollers long-polling its queue. */
  queuePollers: number;
  secrets: number;
  kmsKeys: number;
}

type Resource = { Type: string; Properties?: Record<string, any> };

/** Sizes of the rcb stack in `template` (the JSON of `cdk synth` or CloudFormation GetTemplate). */
export function stackSizesFromTemplate(template: { Resources?: Record<string, Resource> }): StackSizes {
  const resources = Object.values(template.Resources ?? {});
  const ofType = (type: string) => resources.filter((r) => r.Type === type);
  const tasks = ofType('AWS::ECS::TaskDefinition');
  if (tasks.length !== 1) throw new Error(`template: expected one ECS task definition (the shard task), found ${tasks.length}`);
  const task = tasks[0].Properties ?? {};
  const functionMemoryMiB: Record<string, number> = {};
  for (const fn of ofType('AWS::Lambda::Function')) {
    const service = fn.Properties?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME;
    if (typeof service === 'string' && service.startsWith('rcb-')) functionMemoryMiB[service.slice(4)] = Number(fn.Properties?.MemorySize ?? 128);
  }
  return {
    shardTask: {
      vcpu: Number(task.Cpu) / 1024,
      memoryGb: Number(task.Memory) / 1024,
      architecture: task.RuntimePlatform?.CpuArchitecture === 'ARM64' ? 'ARM64' : 'X86_64',
    },
    functionMemoryMiB,
    interfaceEndpointAzs: interfaceEndpointAzsOf(template),
    alarms: ofType('AWS::CloudWatch::Alarm').length,
    dashboards: ofType('AWS::CloudWatch::Dashboard').length,
    queuePollers: ofType('AWS::Lambda::EventSourceMapping').filter((r) => JSON.stringify(r.Properties?.EventSourceArn ?? '').includes('Queue')).length,
    secrets: ofType('AWS::SecretsManager::Secret').length,
    kmsKeys: ofType('AWS::KMS::Key').length,
  };
}

/** Per interface endpoint of `template`, the AZs (subnets) it is in. */
export function interfaceEndpointAzsOf(template: { Resources?: Record<string, Resource> }): number[] {
  return Object.values(template.Resources ?? {})
    .filter((r) => r.Type === 'AWS::EC2::VPCEndpoint' && r.Properties?.VpcEndpointType === 'Interface')
    .map((r) => (Array.isArray(r.Properties?.SubnetIds) ? r.Properties.SubnetIds.length : 1));
}
