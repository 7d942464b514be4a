/**
 * Turning `--model` values into clients: the offline models by name, `replay:FILE`, and
 * (through the registry) hosted models.
 */
import { resolve } from 'node:path';
import type { Pset } from '../../core/types';
import type { ModelClient } from '../../core/model';
import type { ModelInfo } from '../../core/records';
import type { CostModel } from '../../core/run/generate';
import { EmptyModel, OracleModel, replayModels } from '../../adapters/models/offline';
import { UsageError } from './common';
import { replayProblems } from './replay-check';

export interface ResolvedModels {
  clients: Map<string, ModelClient>;
  info: Record<string, ModelInfo>;
  costs: Map<string, CostModel>;
}

export interface HostedModelResolver {
  /** Resolve a registry id; undefined when the id is unknown. */
  resolve(id: string, overrides: { temperature?: number }): { client: ModelClient; info: ModelInfo; cost: CostModel } | undefined;
  /** Known ids, for the error message. */
  ids(): string[];
}

export function resolveModels(
  ids: string[],
  pset: Pset,
  hosted: HostedModelResolver | null,
  overrides: { temperature?: number },
  papersSelected = false,
): ResolvedModels {
  const out: ResolvedModels = { clients: new Map(), info: {}, costs: new Map() };
  const add = (client: ModelClient, info: ModelInfo, cost?: CostModel) => {
    if (out.clients.has(client.id)) throw new UsageError(`model "${client.id}" is named twice`);
    out.clients.set(client.id, client);
    out.info[client.id] = info;
    if (cost) out.costs.set(client.id, cost);
  };
  for (const id of ids) {
    if (id === 'oracle') add(new OracleModel(pset), { config: { name: 'oracle', offline: true } });
    else if (id === 'empty') add(new EmptyModel(), { config: { name: 'empty', offline: true } });
    else if (id.startsWith('replay:')) {
      const file = resolve(id.slice('replay:'.length));
      let models;
      try {
        models = replayModels(file);
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      const problems = replayProblems(file, pset, papersSelected);
      if (problems.length) throw new UsageError(`${problems.join('\n')}\n${problems.length} replay line(s) name no task of the pset at ${pset.root}`);
      for (const m of models) add(m, { config: { name: m.id, replay: file } });
    } else {
      const hit = hosted?.resolve(id, overrides);
      if (!hit) {
        const known = hosted ? hosted.ids().join(', ') : '';
        throw new UsageError(`unknown model "${id}": use oracle, empty, replay:FILE${known ? ` or one of: ${known}` : ''} (see \`rcb models\`)`);
      }
      add(hit.client, hit.info, hit.cost);
    }
  }
  return out;
}
