import { allStates, resourcesOfType, sharedStack, stateMachineDefinition } from './helpers';

/**
 * A deploy during a run must not swap the code under it (docs/cloud.md, "Pins: a deploy during
 * a run"): the state machine and the SQS event source mappings invoke the `live` alias of a
 * published version, never `$LATEST`, old versions outlive the deploy that replaces them, and
 * PlanRun is told the versions a new run records in its pin.
 */
describe('function versions and the run pin', () => {
  const { template } = sharedStack();
  const resources = template.toJSON().Resources as Record<
    string,
    { Type: string; Properties?: Record<string, any>; DeletionPolicy?: string; UpdateReplacePolicy?: string }
  >;
  const typeOf = (id: string): string | undefined => resources[id]?.Type;

  it('every Lambda task of the workflow targets an alias, not the unqualified function', () => {
    const states = allStates(stateMachineDefinition(template).States);
    const lambdaTasks = Object.entries(states).filter(
      ([, s]) => s.Type === 'Task' && (/:lambda:/.test(String(s.Resource)) || /lambda:invoke/.test(String(s.Resource))),
    );
    expect(lambdaTasks.length).toBeGreaterThanOrEqual(5);
    for (const [name, s] of lambdaTasks) {
      const target = String(/lambda:invoke/.test(String(s.Resource)) ? s.Parameters?.FunctionName : s.Resource);
      // arn:aws:lambda:<region>:<account>:function:<name>:<qualifier>
      expect({ name, parts: target.split(':').length, qualifier: target.split(':')[7] }).toEqual({ name, parts: 8, qualifier: 'live' });
    }
    // No token of the definition is a function's own ARN ($LATEST).
    const definition = JSON.stringify(Object.values(resourcesOfType(template, 'AWS::StepFunctions::StateMachine'))[0].Properties?.DefinitionString);
    const unqualified = [...definition.matchAll(/"Fn::GetAtt":\["([^"]+)","Arn"\]/g)].map((m) => m[1]).filter((id) => typeOf(id) === 'AWS::Lambda::Function');
    expect(unqualified).toEqual([]);
  });

  it('every event source mapping feeds an alias', () => {
    const mappings = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::EventSourceMapping');
    expect(mappings.length).toBe(8);
    for (const [id, m] of mappings) {
      // CDK writes `<name>:live` (Fn::Select of the alias ARN's name, then the alias's name).
      const text = JSON.stringify(m.Properties?.FunctionName);
      const ref = /"Ref":"([^"]+)"/.exec(text)?.[1];
      expect({ id, type: ref ? typeOf(ref) : text, qualified: /:live"\]\]\}$/.test(text) || ref === undefined }).toEqual({
        id,
        type: 'AWS::Lambda::Alias',
        qualified: true,
      });
    }
  });

  it('each function publishes a version that a later deploy keeps, with a live alias on it', () => {
    const functions = Object.keys(resources).filter(
      (id) => typeOf(id) === 'AWS::Lambda::Function' && resources[id].Properties?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME !== undefined,
    );
    const versions = Object.entries(resources).filter(([, r]) => r.Type === 'AWS::Lambda::Version');
    const aliases = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::Alias');
    expect(functions.length).toBeGreaterThanOrEqual(7);
    for (const fn of functions) {
      const own = versions.filter(([, v]) => v.Properties?.FunctionName?.Ref === fn);
      expect({ fn, versions: own.length }).toEqual({ fn, versions: 1 });
      const [versionId, version] = own[0];
      // RETAIN: CloudFormation leaves the old version when the next deploy publishes a new one.
      expect({ fn, deletion: version.DeletionPolicy, replace: version.UpdateReplacePolicy }).toEqual({ fn, deletion: 'Retain', replace: 'Retain' });
      const alias = aliases.find((a) => a.Properties?.FunctionName?.Ref === fn);
      expect({ fn, name: alias?.Properties?.Name, version: alias?.Properties?.FunctionVersion }).toEqual({
        fn,
        name: 'live',
        version: { 'Fn::GetAtt': [versionId, 'Version'] },
      });
    }
  });

  it("tells PlanRun the published versions, which a new run's pin records", () => {
    const planRun = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Environment?.Variables?.RCB_TASK_DEFINITION !== undefined,
    );
    const raw = JSON.stringify(planRun?.Properties?.Environment?.Variables?.RCB_FUNCTION_VERSIONS ?? null);
    const named = [...raw.matchAll(/\{\\?"Ref\\?":\\?"([^"\\]+)\\?"\}/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThanOrEqual(6);
    for (const id of named) expect({ id, type: typeOf(id) }).toEqual({ id, type: 'AWS::Lambda::Version' });
    for (const stage of ['check-progress', 'aggregate', 'generate']) expect(raw).toContain(stage);
  });
});
