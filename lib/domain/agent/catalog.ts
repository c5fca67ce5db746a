/**
 * The agent model catalog (SPEC: Agent model catalog; issue 20 items 2, 3): which models a
 * request may name, what `auto` and the aliases resolve to, and what a turn of each costs. Pure:
 * the catalog is built from configuration (lib/adapters/agent/catalog-file.ts) and read here.
 */

export type CostClass = 'low' | 'medium' | 'high';
export const COST_CLASSES: readonly CostClass[] = ['low', 'medium', 'high'];

/**
 * AI credits a turn costs, by cost class: `turn` once per turn (the minimum charge, also for a
 * turn that changes nothing) and `toolCall` per tool call the model makes. Every model charges
 * this way, the offline `builtin` one too, so the accounting runs the same with or without an LLM.
 */
export const CREDITS: { readonly [C in CostClass]: { readonly turn: number; readonly toolCall: number } } = {
  low: { turn: 1, toolCall: 1 },
  medium: { turn: 2, toolCall: 1 },
  high: { turn: 5, toolCall: 2 },
};

/** Steps of one turn (a step: one model answer, then its tool calls): a model that never ends stops here. */
export const MAX_STEPS = 8;
/** Tool calls of one turn, over all its steps: what a turn reserves for at most. */
export const MAX_TOOL_CALLS = 16;

/** What a turn reserves before it starts: the turn and every tool call it may make. */
export const maxTurnCredits = (cost: CostClass): number => CREDITS[cost].turn + MAX_TOOL_CALLS * CREDITS[cost].toolCall;
/** What a turn that made `toolCalls` tool calls costs. */
export const turnCredits = (cost: CostClass, toolCalls: number): number => CREDITS[cost].turn + toolCalls * CREDITS[cost].toolCall;

/** Who answers for a model: the offline planner, or the chat-completions server at AGENT_LLM_URL. */
export type ModelProvider = { readonly kind: 'builtin' } | { readonly kind: 'openai'; readonly upstream: string };

export type CatalogModel = { readonly id: string; readonly cost: CostClass; readonly provider: ModelProvider };
export type CatalogAlias = { readonly id: string; readonly resolvesTo: string; readonly description: string };

export type Catalog = {
  /** Canonical models by id (`auto` is not one: it is resolved at request time). */
  readonly models: ReadonlyMap<string, CatalogModel>;
  readonly aliases: ReadonlyMap<string, CatalogAlias>;
  /** The canonical model `auto` runs. */
  readonly auto: string;
};

export const AUTO = 'auto';
export const AUTO_COST: CostClass = 'medium';
export const BUILTIN = 'builtin';

/** What a request's `model` resolves to: the model that runs, what the job reports, and its cost class. */
export type ResolvedModel = { readonly runs: CatalogModel; readonly resolved_model: string; readonly cost: CostClass };

/** The model a request names (`auto` when none), or null when the catalog has no such id. */
export function resolveModel(catalog: Catalog, requested: string | undefined): ResolvedModel | null {
  const id = requested ?? AUTO;
  if (id === AUTO) {
    const runs = catalog.models.get(catalog.auto);
    // `auto` is listed at cost medium and charged so, whichever model it picks.
    return runs ? { runs, resolved_model: AUTO, cost: AUTO_COST } : null;
  }
  const canonical = catalog.models.get(id) ?? catalog.models.get(catalog.aliases.get(id)?.resolvesTo ?? '');
  return canonical ? { runs: canonical, resolved_model: canonical.id, cost: canonical.cost } : null;
}

/** GET /v1/agent/models. */
export function catalogBody(catalog: Catalog) {
  return {
    availableModels: [{ id: AUTO, cost: AUTO_COST }, ...[...catalog.models.values()].map((m) => ({ id: m.id, cost: m.cost }))],
    aliases: [...catalog.aliases.values()].map((a) => ({
      id: a.id,
      resolvesTo: a.resolvesTo,
      description: a.description,
      cost: catalog.models.get(a.resolvesTo)!.cost,
    })),
  };
}

// ---------------------------------------------------------------- building

/** The served LLM as configured (AGENT_LLM_URL set): its id in the catalog and its name upstream. */
export type LlmModel = { readonly id: string; readonly upstream: string; readonly cost: CostClass };

/** Models and aliases an AGENT_MODELS_FILE adds (already parsed; see `parseModelsFile`). */
export type ModelsFile = { readonly models: readonly CatalogModel[]; readonly aliases: readonly CatalogAlias[] };

/**
 * The built-in catalog, plus the served model when there is one (then `auto` runs it), plus the
 * file's models and aliases. Throws an Error naming the problem: start-up stops with it.
 */
export function buildCatalog(llm: LlmModel | null, file: ModelsFile | null): Catalog {
  const models = new Map<string, CatalogModel>([[BUILTIN, { id: BUILTIN, cost: 'low', provider: { kind: 'builtin' } }]]);
  if (llm) models.set(llm.id, { id: llm.id, cost: llm.cost, provider: { kind: 'openai', upstream: llm.upstream } });
  const aliases = new Map<string, CatalogAlias>([
    [
      'offline',
      { id: 'offline', resolvesTo: BUILTIN, description: 'The built-in planner: offline and deterministic, a fixed table of phrasings' },
    ],
  ]);
  if (llm)
    aliases.set('smart', { id: 'smart', resolvesTo: llm.id, description: `The chat model served at AGENT_LLM_URL (${llm.upstream})` });
  for (const m of file?.models ?? []) {
    if (m.id === AUTO || models.has(m.id)) throw new Error(`model "${m.id}" is defined twice (or is reserved)`);
    if (m.provider.kind === 'openai' && !llm) throw new Error(`model "${m.id}" is served by the LLM, but AGENT_LLM_URL is not set`);
    models.set(m.id, m);
  }
  for (const a of file?.aliases ?? []) {
    if (a.id === AUTO || models.has(a.id)) throw new Error(`alias "${a.id}" has the id of a model`);
    if (!models.has(a.resolvesTo)) throw new Error(`alias "${a.id}" resolves to "${a.resolvesTo}", which is not a model`);
    aliases.set(a.id, a);
  }
  return { models, aliases, auto: llm ? llm.id : BUILTIN };
}

const ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$/;

/**
 * An AGENT_MODELS_FILE's JSON: `{"models": [{"id", "cost", "provider": "builtin"|"openai",
 * "upstream"?}], "aliases": [{"id", "resolvesTo", "description"}]}`. Throws naming the first
 * field that is wrong (`models[1].cost: must be low, medium or high`).
 */
export function parseModelsFile(value: unknown): ModelsFile {
  const fail = (path: string, what: string): never => {
    throw new Error(`${path}: ${what}`);
  };
  if (!isObject(value)) return fail('(file)', 'must be a JSON object with "models" and/or "aliases"');
  for (const key of Object.keys(value)) if (key !== 'models' && key !== 'aliases') fail(key, 'unknown property');
  const list = (key: string): unknown[] => {
    const v = value[key] ?? [];
    return Array.isArray(v) ? v : fail(key, 'must be an array');
  };
  const id = (path: string, v: unknown): string =>
    typeof v === 'string' && ID.test(v) ? v : fail(path, 'must be an id (letters, digits, . _ : / -)');
  const models = list('models').map((m, i): CatalogModel => {
    const at = `models[${i}]`;
    if (!isObject(m)) return fail(at, 'must be an object');
    for (const key of Object.keys(m)) if (!['id', 'cost', 'provider', 'upstream'].includes(key)) fail(`${at}.${key}`, 'unknown property');
    if (!COST_CLASSES.includes(m.cost as CostClass)) fail(`${at}.cost`, 'must be low, medium or high');
    const modelId = id(`${at}.id`, m.id);
    if (m.provider === 'builtin') return { id: modelId, cost: m.cost as CostClass, provider: { kind: 'builtin' } };
    if (m.provider !== 'openai') return fail(`${at}.provider`, 'must be "builtin" or "openai"');
    const upstream = m.upstream ?? modelId;
    if (typeof upstream !== 'string' || upstream === '') fail(`${at}.upstream`, 'must be a non-empty string');
    return { id: modelId, cost: m.cost as CostClass, provider: { kind: 'openai', upstream: upstream as string } };
  });
  const aliases = list('aliases').map((a, i): CatalogAlias => {
    const at = `aliases[${i}]`;
    if (!isObject(a)) return fail(at, 'must be an object');
    for (const key of Object.keys(a)) if (!['id', 'resolvesTo', 'description'].includes(key)) fail(`${at}.${key}`, 'unknown property');
    if (typeof a.description !== 'string' || a.description.trim() === '') fail(`${at}.description`, 'must be a non-empty string');
    return { id: id(`${at}.id`, a.id), resolvesTo: id(`${at}.resolvesTo`, a.resolvesTo), description: a.description as string };
  });
  return { models, aliases };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
