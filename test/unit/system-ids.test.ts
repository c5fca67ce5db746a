import assert from 'node:assert/strict';
import { validate, version } from 'uuid';
import { randomIds } from '../../lib/adapters/system/clock';
import { importJobId, isImportJobId, isJobId } from '../../lib/domain/ids';

/** The ids the services make: v4 where order means nothing, v7 where the stores want them in order. */
describe('system ids', () => {
  it('makes UUID v7 ids that are unique and strictly increasing, also many within one millisecond', () => {
    const ids = Array.from({ length: 20_000 }, () => randomIds.uuidv7());
    for (const id of ids.slice(0, 100)) {
      assert.ok(validate(id), id);
      assert.equal(version(id), 7);
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    assert.equal(new Set(ids).size, ids.length);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} < ${ids[i]}`);
  });

  it('puts the time of making in a v7 id', () => {
    const before = Date.now();
    const id = randomIds.uuidv7();
    const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    assert.ok(ms >= before && ms <= Date.now() + 1, `${ms} within [${before}, now]`);
  });

  it('does not repeat the random part of v7 ids made across many refills of its entropy pool', () => {
    const tails = new Set(Array.from({ length: 5_000 }, () => randomIds.uuidv7().slice(19)));
    assert.equal(tails.size, 5_000);
  });

  it('makes UUID v4 ids', () => {
    const id = randomIds.uuid();
    assert.equal(version(id), 4);
  });
});

describe('job ids', () => {
  it("tells an import's id by its prefix; a bare UUID (agent, publish) is not one", () => {
    const uuid = randomIds.uuidv7();
    assert.equal(isImportJobId(importJobId(uuid)), true);
    assert.equal(isImportJobId(uuid), false);
    assert.ok(isJobId(importJobId(uuid)) && isJobId(uuid));
  });
});
