// Mocha's spec reporter plus one plain closing line per run ("unit: N passed, N failed, N skipped"),
// appended to .tmp/test-counts.jsonl so `npm test` can print the total across tiers.
const Mocha = require('mocha');
const { appendFileSync, mkdirSync } = require('node:fs');
const { join } = require('node:path');

const { EVENT_RUN_END } = Mocha.Runner.constants;

class TierReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const tier = process.env.TEST_TIER || 'tests';
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats;
      console.log(`${tier}: ${passes} passed, ${failures} failed, ${pending} skipped`);
      const dir = join(__dirname, '..', '..', '.tmp');
      mkdirSync(dir, { recursive: true });
      appendFileSync(join(dir, 'test-counts.jsonl'), `${JSON.stringify({ tier, passes, failures, pending })}\n`);
    });
  }
}

module.exports = TierReporter;
