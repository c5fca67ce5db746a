import assert from 'node:assert/strict';
import { effectiveConfig, loadConfig, parseDurationSeconds } from '../../lib/config';

describe('configuration from the environment', () => {
  it('has working defaults for the embedded mode', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.baseUrl, 'http://localhost:8080/v1');
    assert.equal(c.webUrl, 'http://localhost:8080');
    assert.equal(c.kafka, undefined);
    assert.equal(c.rateLimitPerMinute, 600);
    assert.equal(c.downloadUrlTtlSeconds, 3600);
  });

  it('sizes each job type pool, defaults sized for two cores, and still reads PROCESSOR_CONCURRENCY for imports', () => {
    assert.deepEqual(loadConfig({}).concurrency, { import: 8, agent: 4, publish: 1 });
    assert.deepEqual(loadConfig({ IMPORT_CONCURRENCY: '6', AGENT_CONCURRENCY: '8', PUBLISH_CONCURRENCY: '2' }).concurrency, {
      import: 6,
      agent: 8,
      publish: 2,
    });
    assert.equal(loadConfig({ PROCESSOR_CONCURRENCY: '3' }).concurrency.import, 3);
    assert.equal(loadConfig({ PROCESSOR_CONCURRENCY: '3', IMPORT_CONCURRENCY: '5' }).concurrency.import, 5);
    assert.throws(() => loadConfig({ PUBLISH_CONCURRENCY: '0' }), /PUBLISH_CONCURRENCY/);
  });

  it('limits GET /published_projects/{slug} to 1000 requests per user per hour unless PUBLISHED_PROJECTS_RATE_LIMIT_PER_HOUR says', () => {
    assert.equal(loadConfig({}).publishedProjectsPerHour, 1000);
    assert.equal(loadConfig({ PUBLISHED_PROJECTS_RATE_LIMIT_PER_HOUR: '50' }).publishedProjectsPerHour, 50);
    for (const bad of ['0', '-1', 'many']) {
      assert.throws(() => loadConfig({ PUBLISHED_PROJECTS_RATE_LIMIT_PER_HOUR: bad }), /PUBLISHED_PROJECTS_RATE_LIMIT_PER_HOUR/);
    }
  });

  it('derives BASE_URL and WEB_URL from PORT', () => {
    const c = loadConfig({ PORT: '9090' });
    assert.equal(c.baseUrl, 'http://localhost:9090/v1');
  });

  it('takes a BASE_URL that ends in /v1, under a path of its own or not', () => {
    assert.equal(loadConfig({ BASE_URL: 'https://api.example.com/v1/' }).baseUrl, 'https://api.example.com/v1');
    assert.equal(loadConfig({ BASE_URL: 'https://example.com/media/v1' }).baseUrl, 'https://example.com/media/v1');
  });

  for (const [value, why] of [
    ['http://localhost:8080', /does not end in \/v1.*http:\/\/localhost:8080\/v1/],
    ['http://localhost:8080/v2', /does not end in \/v1/],
    ['ftp://example.com/v1', /not an http\(s\) URL/],
    ['https://example.com/v1?x=1', /query or fragment/],
    ['not a url', /not a URL/],
  ] as const) {
    it(`refuses BASE_URL ${JSON.stringify(value)}, naming the variable and saying why (upload URLs are made under it)`, () => {
      assert.throws(
        () => loadConfig({ BASE_URL: value }),
        (err: Error) => err.message.includes('BASE_URL') && why.test(err.message),
      );
    });
  }

  for (const [name, value] of [
    ['PORT', 'eighty'],
    ['RATE_LIMIT_PER_MINUTE', '-3'],
    ['TRANSCRIBER', 'whisperer'],
    ['DOWNLOAD_URL_TTL', 'soon'],
    ['LOG_LEVEL', 'loud'],
    ['WEB_URL', 'not a url'],
  ]) {
    it(`stops with a message naming ${name} when it is ${JSON.stringify(value)}`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: Error) => err.message.includes(name),
      );
    });
  }

  it('refuses a malformed OUTBOUND_ALLOWLIST entry, naming the variable and the entry', () => {
    assert.throws(
      () => loadConfig({ OUTBOUND_ALLOWLIST: '127.0.0.1,10.0.0.0/99' }),
      (err: Error) => err.message.includes('OUTBOUND_ALLOWLIST') && err.message.includes('10.0.0.0/99'),
    );
  });

  for (const entry of ['*', 'http://x.com', 'a b']) {
    it(`refuses the OUTBOUND_ALLOWLIST entry ${JSON.stringify(entry)}, naming the variable and the entry`, () => {
      assert.throws(
        () => loadConfig({ OUTBOUND_ALLOWLIST: `127.0.0.1,${entry}` }),
        (err: Error) => err.message.includes('OUTBOUND_ALLOWLIST') && err.message.includes(`"${entry}"`),
      );
    });
  }

  it('reads an empty variable as unset, and refuses a short SIGNING_SECRET', () => {
    const config = loadConfig({ TRANSCRIBER_URL: '', TRANSCRIBER_API_KEY: '', SIGNING_SECRET: '' });
    assert.equal(config.transcriber.url, undefined);
    assert.equal(config.signingSecret, undefined);
    assert.equal(config.uploadUrlTtlSeconds, 3 * 3600);
    assert.throws(() => loadConfig({ SIGNING_SECRET: 'short' }), /SIGNING_SECRET: must be at least 16 characters/);
    assert.throws(() => loadConfig({ TRANSCRIBER: 'openai', TRANSCRIBER_URL: '' }), /TRANSCRIBER_URL: required/);
  });
  it('requires TRANSCRIBER_URL for the openai transcriber', () => {
    assert.throws(() => loadConfig({ TRANSCRIBER: 'openai' }), /TRANSCRIBER_URL/);
  });

  it('takes TRANSCRIBER_MODEL for a self-hosted OpenAI-compatible server, and shows it with no secret', () => {
    const config = loadConfig({
      TRANSCRIBER: 'openai',
      TRANSCRIBER_URL: 'http://whisper.lan:8000/v1',
      TRANSCRIBER_MODEL: 'Systran/faster-whisper-small',
      TRANSCRIBER_API_KEY: 'sk-secret',
      MONGO_URL: 'mongodb://user:pw@mongo:27017/mps',
    });
    assert.equal(config.transcriber.model, 'Systran/faster-whisper-small');
    const shown = effectiveConfig(config);
    assert.equal(shown.transcriber_model, 'Systran/faster-whisper-small');
    assert.equal(shown.read_store, 'mongodb://***@mongo:27017/mps');
    assert.equal(shown.mode, 'distributed');
    assert.doesNotMatch(JSON.stringify(shown), /sk-secret|pw@/);
  });

  it('parses durations with units', () => {
    assert.equal(parseDurationSeconds('90'), 90);
    assert.equal(parseDurationSeconds('15m'), 900);
    assert.equal(parseDurationSeconds('1h'), 3600);
    assert.equal(parseDurationSeconds('3d'), 259200);
    assert.throws(() => parseDurationSeconds('1 hour'));
  });

  it('accepts MONGO_URL as the MongoDB driver does: replica sets with several hosts, and mongodb+srv', () => {
    for (const value of [
      'mongodb://localhost:27017/media_project',
      'mongodb://a:27017,b:27017,c:27017/mps?replicaSet=rs0',
      'mongodb://user:p%40ss@a:27017,b:27017/mps?replicaSet=rs0&authSource=admin&w=majority',
      'mongodb+srv://user:secret@cluster0.example.net/mps?retryWrites=true',
    ]) {
      assert.equal(loadConfig({ MONGO_URL: value }).mongoUrl, value);
    }
  });

  for (const value of ['http://mongo:27017/mps', 'mongodb://', 'mongodb+srv://a.example.net:27017/mps', 'mongodb://a/mps?tls=maybe']) {
    it(`refuses MONGO_URL ${JSON.stringify(value)}, naming the variable`, () => {
      assert.throws(
        () => loadConfig({ MONGO_URL: value }),
        (err: Error) => err.message.includes('MONGO_URL') && err.message.includes('not a MongoDB connection string'),
      );
    });
  }

  it('does not repeat a MONGO_URL password in its refusal', () => {
    assert.throws(
      () => loadConfig({ MONGO_URL: 'mongodb://user:hunter2@a/mps?tls=maybe' }),
      (err: Error) => err.message.includes('MONGO_URL') && !err.message.includes('hunter2'),
    );
  });

  it('splits KAFKA_BROKERS and the allow list', () => {
    const c = loadConfig({ KAFKA_BROKERS: 'a:9092, b:9092', OUTBOUND_ALLOWLIST: '127.0.0.1,10.0.0.0/8' });
    assert.deepEqual(c.kafka?.brokers, ['a:9092', 'b:9092']);
    assert.deepEqual(c.outboundAllowlist, ['127.0.0.1', '10.0.0.0/8']);
  });

  it("takes the consumer groups' session timeout as a duration within what brokers accept (30 s unless KAFKA_SESSION_TIMEOUT says)", () => {
    assert.equal(loadConfig({ KAFKA_BROKERS: 'k:9092' }).kafka?.sessionTimeoutMs, 30_000);
    assert.equal(loadConfig({ KAFKA_BROKERS: 'k:9092', KAFKA_SESSION_TIMEOUT: '10s' }).kafka?.sessionTimeoutMs, 10_000);
    assert.equal(loadConfig({ KAFKA_BROKERS: 'k:9092', KAFKA_SESSION_TIMEOUT: '2m' }).kafka?.sessionTimeoutMs, 120_000);
    for (const bad of ['5s', '31m', 'soon']) {
      assert.throws(() => loadConfig({ KAFKA_BROKERS: 'k:9092', KAFKA_SESSION_TIMEOUT: bad }), /KAFKA_SESSION_TIMEOUT/, bad);
    }
  });
});
