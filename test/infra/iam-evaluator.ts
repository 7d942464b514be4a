/**
 * A small IAM policy evaluator over a synthesized template's own statements: Allow and Deny
 * (an explicit Deny wins, no statement is an implicit deny), Action/NotAction and
 * Resource/NotResource with `*` and `?` wildcards, and the condition operators rcb's policies
 * use. Resources are resolved from the template's intrinsics (Ref, Fn::GetAtt, Fn::Join,
 * Fn::Select, Fn::Split, pseudo parameters) to ARNs made up per logical id, the same for
 * the policy and for the request, so a statement matches exactly the stack's resources it names.
 */

export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';
export const STACK_NAME = 'RcbTest';
export const STACK_ID = `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/${STACK_NAME}/00000000-0000-0000-0000-000000000000`;

type Resources = Record<string, { Type: string; Properties?: Record<string, any> }>;

/** The made-up name and ARN of a resource of the template, by its type. */
function identity(id: string, type: string): { ref: string; arn: string; name: string } {
  const name = id.toLowerCase();
  const at = `${REGION}:${ACCOUNT}`;
  switch (type) {
    case 'AWS::S3::Bucket':
      return { ref: name, name, arn: `arn:aws:s3:::${name}` };
    case 'AWS::DynamoDB::Table':
    case 'AWS::DynamoDB::GlobalTable':
      return { ref: name, name, arn: `arn:aws:dynamodb:${at}:table/${name}` };
    case 'AWS::StepFunctions::StateMachine':
      return { ref: `arn:aws:states:${at}:stateMachine:${id}`, name: id, arn: `arn:aws:states:${at}:stateMachine:${id}` };
    case 'AWS::SecretsManager::Secret':
      return { ref: `arn:aws:secretsmanager:${at}:secret:${id}-AbCdEf`, name: id, arn: `arn:aws:secretsmanager:${at}:secret:${id}-AbCdEf` };
    case 'AWS::IAM::Role':
      return { ref: id, name: id, arn: `arn:aws:iam::${ACCOUNT}:role/${id}` };
    case 'AWS::IAM::ManagedPolicy':
      return { ref: `arn:aws:iam::${ACCOUNT}:policy/${id}`, name: id, arn: `arn:aws:iam::${ACCOUNT}:policy/${id}` };
    case 'AWS::Lambda::Function':
      return { ref: id, name: id, arn: `arn:aws:lambda:${at}:function:${id}` };
    case 'AWS::SNS::Topic':
      return { ref: `arn:aws:sns:${at}:${id}`, name: id, arn: `arn:aws:sns:${at}:${id}` };
    case 'AWS::SQS::Queue':
      return { ref: `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${id}`, name: id, arn: `arn:aws:sqs:${at}:${id}` };
    case 'AWS::Scheduler::ScheduleGroup':
      return { ref: id, name: id, arn: `arn:aws:scheduler:${at}:schedule-group/${id}` };
    default: {
      const service = type.split('::')[1]?.toLowerCase() ?? 'unknown';
      return { ref: id, name: id, arn: `arn:aws:${service}:${at}:${id}` };
    }
  }
}

/** Resolves intrinsic functions of a template to plain values. */
export class TemplateResolver {
  constructor(private readonly resources: Resources) {}

  /** The ARN of a resource by logical id. */
  arn(id: string): string {
    return this.identityOf(id).arn;
  }

  /** The Ref of a resource by logical id (a bucket's name, a state machine's ARN...). */
  ref(id: string): string {
    return this.identityOf(id).ref;
  }

  private identityOf(id: string): { ref: string; arn: string; name: string } {
    const resource = this.resources[id];
    if (!resource) throw new Error(`no resource ${id} in the template`);
    return identity(id, resource.Type);
  }

  resolve(value: unknown): unknown {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
    if (Array.isArray(value)) return value.map((v) => this.resolve(v));
    if (!value || typeof value !== 'object') return value;
    const obj = value as Record<string, unknown>;
    if ('Ref' in obj) return this.resolveRef(String(obj.Ref));
    if ('Fn::GetAtt' in obj) {
      const [id, attr] = obj['Fn::GetAtt'] as [string, string];
      const it = this.identityOf(id);
      return attr === 'Arn' ? it.arn : attr === 'Name' ? it.name : `${it.arn}#${attr}`;
    }
    if ('Fn::Join' in obj) {
      const [sep, parts] = obj['Fn::Join'] as [string, unknown[]];
      return (this.resolve(parts) as unknown[]).join(sep);
    }
    if ('Fn::Split' in obj) {
      const [sep, source] = obj['Fn::Split'] as [string, unknown];
      return String(this.resolve(source)).split(sep);
    }
    if ('Fn::Select' in obj) {
      const [index, list] = obj['Fn::Select'] as [number | string, unknown];
      return (this.resolve(list) as unknown[])[Number(index)];
    }
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, this.resolve(v)]));
  }

  private resolveRef(name: string): string {
    const pseudo: Record<string, string> = {
      'AWS::Partition': 'aws',
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::StackId': STACK_ID,
      'AWS::StackName': STACK_NAME,
      'AWS::URLSuffix': 'amazonaws.com',
    };
    return pseudo[name] ?? this.ref(name);
  }
}

export interface PolicyStatement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
  Sid?: string;
}

/** A request as IAM evaluates it: an action on a resource, with its context keys (single or multivalued). */
export interface IamRequest {
  action: string;
  resource: string;
  context?: Record<string, string | string[]>;
}

export type Decision = 'allowed' | 'explicitly denied' | 'implicitly denied';

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** IAM's wildcard match: `*` any run of characters, `?` one; actions compare case-insensitively. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\/]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`, ignoreCase ? 'i' : '').test(value);
}

function matchesOne(operator: string, pattern: string, value: string): boolean {
  if (operator === 'StringEquals' || operator === 'ArnEquals') return pattern === value;
  if (operator === 'StringLike' || operator === 'ArnLike') return wildcardMatch(pattern, value);
  if (operator === 'StringNotEquals' || operator === 'StringNotLike') throw new Error('negated operators are matched by conditionHolds');
  throw new Error(`condition operator ${operator} is not evaluated here`);
}

/** One condition operator over one key: IAM's semantics of ForAllValues, ForAnyValue and Null. */
function conditionHolds(op: string, key: string, expected: string[], context: Record<string, string | string[]>): boolean {
  const present = key in context;
  const values = list(context[key]);
  if (op === 'Null') return expected.every((e) => (e === 'true') === !present);
  const [qualifier, written] = op.includes(':') ? op.split(':') : ['', op];
  // A negated operator holds for a value that matches none of the expected ones.
  const negated = /^String(Not)(Equals|Like)$/.exec(written);
  const operator = negated ? `String${negated[2]}` : written;
  const anyMatch = (v: string) => expected.some((e) => matchesOne(operator, e, v)) !== Boolean(negated);
  // ForAllValues holds on an empty or missing key (AWS documents this; hence Null beside it).
  if (qualifier === 'ForAllValues') return values.every(anyMatch);
  if (qualifier === 'ForAnyValue') return values.some(anyMatch);
  return present && values.length === 1 && anyMatch(values[0]);
}

function statementApplies(s: PolicyStatement, request: IamRequest): boolean {
  const actionMatch = (patterns: string[]) => patterns.some((p) => wildcardMatch(p, request.action, true));
  if (s.Action !== undefined ? !actionMatch(list(s.Action)) : actionMatch(list(s.NotAction))) return false;
  const resourceMatch = (patterns: string[]) => patterns.some((p) => wildcardMatch(p, request.resource));
  if (s.Resource !== undefined ? !resourceMatch(list(s.Resource)) : resourceMatch(list(s.NotResource))) return false;
  const context = request.context ?? {};
  return Object.entries(s.Condition ?? {}).every(([op, keys]) => Object.entries(keys).every(([key, v]) => conditionHolds(op, key, list(v), context)));
}

/** The decision of a set of statements (resolved: plain strings) on a request. */
export function evaluate(statements: PolicyStatement[], request: IamRequest): Decision {
  const applying = statements.filter((s) => statementApplies(s, request));
  if (applying.some((s) => s.Effect === 'Deny')) return 'explicitly denied';
  return applying.some((s) => s.Effect === 'Allow') ? 'allowed' : 'implicitly denied';
}
