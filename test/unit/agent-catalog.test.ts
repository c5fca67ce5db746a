import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAgentCatalog } from '../../lib/adapters/agent/catalog-file';
import { ConfigError } from '../../lib/config';
import {
  buildCatalog,
  catalogBody,
  CREDITS,
  MAX_TOOL_CALLS,
  maxTurnCredits,
  parseModelsFile,
  resolveModel,
  turnCredits,
} from '../../lib/domain/agent/catalog';

describe('agent model catalog', () => {
  const llm = { id: 'gpt-test', upstream: 'gpt-test', cost: 'medium' as const };

  describe('without AGENT_LLM_URL', () => {
    const catalog = buildCatalog(null, null);
    it('lists auto at cost medium, builtin, and at least one alias', () => {
      assert.deepEqual(catalogBody(catalog), {
        availableModels: [
          { id: 'auto', cost: 'medium' },
          { id: 'builtin', cost: 'low' },
        ],
        aliases: [
          {
            id: 'offline',
            resolvesTo: 'builtin',
            description: 'The built-in planner: offline and deterministic, a fixed table of phrasings',
            cost: 'low',
          },
        ],
      });
    });
    it('resolves auto to builtin (reported as auto, charged at medium), an alias to its canonical id, and refuses an unknown id', () => {
      assert.deepEqual(resolveModel(catalog, undefined), { runs: catalog.models.get('builtin'), resolved_model: 'auto', cost: 'medium' });
      assert.deepEqual(resolveModel(catalog, 'auto'), resolveModel(catalog, undefined));
      assert.equal(resolveModel(catalog, 'offline')?.resolved_model, 'builtin');
      assert.equal(resolveModel(catalog, 'builtin')?.cost, 'low');
      assert.equal(resolveModel(catalog, 'gpt-test'), null);
      assert.equal(resolveModel(catalog, 'constructor'), null);
    });
  });

  describe('with AGENT_LLM_URL', () => {
    const catalog = buildCatalog(llm, null);
    it('lists the served model and auto runs it', () => {
      assert.ok(catalogBody(catalog).availableModels.some((m) => m.id === 'gpt-test'));
      assert.equal(resolveModel(catalog, 'auto')?.runs.id, 'gpt-test');
      assert.equal(resolveModel(catalog, 'smart')?.resolved_model, 'gpt-test');
    });
  });

  describe('AGENT_MODELS_FILE', () => {
    it('adds models and aliases', () => {
      const file = parseModelsFile({
        models: [{ id: 'deep', cost: 'high', provider: 'openai', upstream: 'gpt-big' }],
        aliases: [{ id: 'best', resolvesTo: 'deep', description: 'The deepest model' }],
      });
      const catalog = buildCatalog(llm, file);
      assert.deepEqual(resolveModel(catalog, 'best'), {
        runs: { id: 'deep', cost: 'high', provider: { kind: 'openai', upstream: 'gpt-big' } },
        resolved_model: 'deep',
        cost: 'high',
      });
      assert.deepEqual(catalogBody(catalog).aliases.at(-1), {
        id: 'best',
        resolvesTo: 'deep',
        description: 'The deepest model',
        cost: 'high',
      });
    });

    const bad: [string, unknown, RegExp][] = [
      ['a list', [], /\(file\): must be a JSON object/],
      ['an unknown key', { model: [] }, /model: unknown property/],
      ['a bad cost', { models: [{ id: 'x', cost: 'cheap', provider: 'builtin' }] }, /models\[0\]\.cost: must be low, medium or high/],
      ['a bad provider', { models: [{ id: 'x', cost: 'low', provider: 'anthropic' }] }, /models\[0\]\.provider/],
      ['a bad id', { models: [{ id: 'a b', cost: 'low', provider: 'builtin' }] }, /models\[0\]\.id/],
      ['an alias without description', { aliases: [{ id: 'y', resolvesTo: 'builtin' }] }, /aliases\[0\]\.description/],
    ];
    for (const [what, value, message] of bad) {
      it(`refuses ${what}, naming the field`, () => assert.throws(() => parseModelsFile(value), message));
    }
    it('refuses an alias to no model, a duplicate model, and an LLM model without AGENT_LLM_URL', () => {
      assert.throws(
        () => buildCatalog(null, parseModelsFile({ aliases: [{ id: 'y', resolvesTo: 'nope', description: 'd' }] })),
        /not a model/,
      );
      assert.throws(() => buildCatalog(null, parseModelsFile({ models: [{ id: 'builtin', cost: 'low', provider: 'builtin' }] })), /twice/);
      assert.throws(() => buildCatalog(null, parseModelsFile({ models: [{ id: 'g', cost: 'low', provider: 'openai' }] })), /AGENT_LLM_URL/);
    });

    it('stops start-up with a ConfigError naming the variable and the problem (unreadable, not JSON, wrong)', () => {
      const dir = mkdtempSync(join(tmpdir(), 'models-'));
      const config = (modelsFile: string) => ({ llmUrl: undefined, llmApiKey: undefined, llmModel: 'gpt-4o-mini', modelsFile });
      writeFileSync(join(dir, 'bad.json'), '{"models": [');
      writeFileSync(join(dir, 'wrong.json'), '{"models": [{"id": "x", "cost": "free", "provider": "builtin"}]}');
      writeFileSync(join(dir, 'good.json'), '{"aliases": [{"id": "quick", "resolvesTo": "builtin", "description": "Fast"}]}');
      assert.throws(
        () => openAgentCatalog(config(join(dir, 'missing.json'))),
        (e: Error) => e instanceof ConfigError && /AGENT_MODELS_FILE.*ENOENT/.test(e.message),
      );
      assert.throws(() => openAgentCatalog(config(join(dir, 'bad.json'))), /AGENT_MODELS_FILE.*not JSON/);
      assert.throws(() => openAgentCatalog(config(join(dir, 'wrong.json'))), /AGENT_MODELS_FILE.*models\[0\]\.cost/);
      assert.equal(resolveModel(openAgentCatalog(config(join(dir, 'good.json'))), 'quick')?.resolved_model, 'builtin');
    });
  });

  describe('credits', () => {
    it('a turn costs its class per turn plus per tool call, and reserves for the most tool calls', () => {
      for (const cost of ['low', 'medium', 'high'] as const) {
        assert.equal(turnCredits(cost, 0), CREDITS[cost].turn);
        assert.equal(turnCredits(cost, 3), CREDITS[cost].turn + 3 * CREDITS[cost].toolCall);
        assert.equal(maxTurnCredits(cost), turnCredits(cost, MAX_TOOL_CALLS));
      }
    });
  });
});
