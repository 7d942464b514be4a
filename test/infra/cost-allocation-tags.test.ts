/**
 * The stack-wide cost-allocation tags (`Tags.of` in infra/rcb-stack.ts), read from the
 * synthesized default stack: every resource of a billed type carries `rcb:project`,
 * `rcb:stack` and its `rcb:component`, so Cost Explorer splits the stack's spend by them. The
 * per-run tags (RunTask `Tags`, S3 object tagging) are pinned in orchestrator-construct,
 * task-role-coverage and test/aws/s3-object-tags.
 */
import { sharedStack } from './helpers';

type Resource = { Type: string; Properties?: Record<string, any> };

/** Types that bill (or hold what bills) and accept tags. */
const BILLED = [
  'AWS::Lambda::Function',
  'AWS::SQS::Queue',
  'AWS::DynamoDB::Table',
  'AWS::S3::Bucket',
  'AWS::StepFunctions::StateMachine',
  'AWS::ECS::Cluster',
  'AWS::ECS::TaskDefinition',
  'AWS::ECR::Repository',
  'AWS::EC2::VPCEndpoint',
  'AWS::Logs::LogGroup',
  'AWS::KMS::Key',
  'AWS::SecretsManager::Secret',
  'AWS::SNS::Topic',
  'AWS::CloudWatch::Alarm',
];

/** The component of each construct of the stack, by the start of its resources' logical ids. */
const COMPONENT: Record<string, string> = {
  Storage: 'storage',
  Generation: 'generation',
  Evaluation: 'evaluation',
  Orchestrator: 'orchestrator',
  Monitoring: 'monitoring',
};

function tagsOf(r: Resource): Record<string, string> {
  const tags = r.Properties?.Tags;
  if (Array.isArray(tags)) return Object.fromEntries(tags.map((t: { Key: string; Value: string }) => [t.Key, t.Value]));
  return tags && typeof tags === 'object' ? (tags as Record<string, string>) : {};
}

describe('cost-allocation tags', () => {
  it('every billed resource carries rcb:project, rcb:stack and the component of the construct it is in', () => {
    const resources = Object.entries(sharedStack().template.toJSON().Resources as Record<string, Resource>);
    const billed = resources.filter(([, r]) => BILLED.includes(r.Type));
    const untagged: string[] = [];
    for (const [id, r] of billed) {
      const tags = tagsOf(r);
      // CDK's stack-level singletons: its default-security-group provider (no tag manager: no
      // tags at all) and the AwsCustomResource function of the prefix-list lookup (the stack's tags).
      if (id.startsWith('CustomVpcRestrictDefaultSG')) continue;
      const construct = Object.keys(COMPONENT).find((c) => id.startsWith(c));
      const stackTags = tags['rcb:project'] === 'rcb' && tags['rcb:stack'] === 'RcbTest';
      const ok = construct ? stackTags && tags['rcb:component'] === COMPONENT[construct] : id.startsWith('AWS679f53fac') && stackTags;
      if (!ok) untagged.push(`${id} (${r.Type}): ${JSON.stringify(tags)}`);
    }
    expect(untagged).toEqual([]);
    // Each billed type is in the stack, so the check above saw it.
    expect(BILLED.filter((type) => !billed.some(([, r]) => r.Type === type))).toEqual([]);
  });
});
