import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { loadConfig } from '../../lib/config';

/**
 * The deployment files no test would otherwise open: docker-compose.yml, the Dockerfile and the
 * gateway's nginx.conf, held to the code they start. No Docker engine runs here, so this is what
 * keeps them from drifting: entry points that exist in the build, settings the service knows and
 * accepts, ports and service names that agree between compose, the gateway and the README.
 * (The gateway's routing itself runs under a real nginx in test/e2e/gateway.test.ts.)
 */

const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

type Service = {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
};
type Compose = { services: Record<string, Service>; volumes: Record<string, unknown> };

// YAML 1.1, as compose reads it: the `<<:` merge keys of the shared service settings.
const compose = load(read('docker-compose.yml'), { schema: YAML11_SCHEMA }) as Compose;
/** The services built from this repository (they share the `x-service` anchor). */
const ours = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);

/** `${NAME:-default}` as compose resolves it with NAME unset. */
const withDefaults = (value: string) => value.replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1');

/** A `dist/…/x.js` entry point's TypeScript source, if the build compiles it (tsconfig.build.json). */
function sourceOf(entry: string): string | null {
  const match = /^dist\/(.+)\.js$/.exec(entry);
  if (!match) return null;
  const include = (JSON.parse(read('tsconfig.build.json')) as { include: string[] }).include;
  const source = `${match[1]}.ts`;
  return include.some((dir) => source.startsWith(`${dir}/`)) && existsSync(join(ROOT, source)) ? source : null;
}

describe('deployment files (docker-compose.yml, Dockerfile, gateway)', () => {
  it('starts every service of ours from an entry point the build compiles', () => {
    assert.deepEqual(ours.map(([name]) => name).sort(), ['command-api', 'processors', 'query-api', 'relay', 'webhook-dispatcher']);
    for (const [name, service] of ours) {
      const [node, entry, ...rest] = service.command ?? [];
      assert.equal(node, 'node', name);
      assert.deepEqual(rest, [], name);
      assert.ok(sourceOf(entry), `${name}: ${entry} is not built from any source`);
    }
    const cmd = /^CMD \["node", "([^"]+)"\]$/m.exec(read('Dockerfile'));
    assert.ok(cmd && sourceOf(cmd[1]), `the Dockerfile's CMD: ${cmd?.[1]}`);
  });

  it('passes only settings the service declares, and they load as its configuration', () => {
    const declared = new Set([...read('lib/config.ts').matchAll(/^\s+([A-Z][A-Z0-9_]+): [a-zA-Z]+\(/gm)].map((m) => m[1]));
    assert.ok(declared.size > 30, `${declared.size} settings found in lib/config.ts`);
    for (const [name, service] of ours) {
      const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, withDefaults(String(v))]));
      const unknown = Object.keys(env).filter((k) => !declared.has(k));
      assert.deepEqual(unknown, [], `${name} sets settings lib/config.ts does not read`);
      const config = loadConfig(env);
      assert.equal(config.port, 8080, name);
      assert.ok(config.kafka && config.esdbUrl && config.mongoUrl, `${name}: distributed on its three servers`);
    }
  });

  it('probes the APIs on the port they listen on, and names only services and volumes that exist', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) assert.ok(compose.services[dependency], `${name} → ${dependency}`);
      for (const volume of service.volumes ?? []) {
        const [source] = volume.split(':');
        if (source.startsWith('.')) assert.ok(existsSync(join(ROOT, source)), `${name} mounts ${source}`);
        else assert.ok(source in compose.volumes, `${name} mounts the undeclared volume ${source}`);
      }
    }
    for (const name of ['command-api', 'query-api']) {
      const probe = compose.services[name].healthcheck?.test.join(' ') ?? '';
      assert.match(probe, new RegExp(`127\\.0\\.0\\.1:${compose.services[name].environment?.PORT}/healthz`), name);
    }
  });

  it('has the gateway send to compose services on their port, from the file compose mounts', () => {
    const gateway = compose.services.gateway;
    assert.ok(gateway.volumes?.includes('./deploy/gateway/nginx.conf:/etc/nginx/conf.d/default.conf:ro'));
    assert.ok(gateway.ports?.includes('8080:80'));
    const conf = read('deploy/gateway/nginx.conf');
    assert.match(conf, /^\s*listen 80;$/m);
    const targets = new Set([...conf.matchAll(/(?:set \$[a-z_]+|^\s+(?:GET|HEAD|default)) +([a-z-]+);/gm)].map((m) => m[1]));
    assert.deepEqual([...targets].sort(), ['command-api', 'query-api']);
    const ports = new Set([...conf.matchAll(/proxy_pass http:\/\/\$[a-z_]+:(\d+);/g)].map((m) => m[1]));
    assert.deepEqual([...ports], [compose.services['command-api'].environment?.PORT]);
    // Links the service writes point at the gateway's published port.
    const env = compose.services['command-api'].environment!;
    assert.equal(new URL(env.BASE_URL).port, '8080');
    assert.equal(new URL(env.WEB_URL).port, '8080');
  });

  it("publishes Kafka's host listener on the port it advertises, the one the README's contract command uses", () => {
    const kafka = compose.services.kafka;
    const advertised = /EXTERNAL:\/\/localhost:\$\{KAFKA_HOST_PORT:-(\d+)\}/.exec(kafka.environment?.KAFKA_ADVERTISED_LISTENERS ?? '');
    const published = /^127\.0\.0\.1:\$\{KAFKA_HOST_PORT:-(\d+)\}:(\d+)$/.exec(kafka.ports?.[0] ?? '');
    assert.ok(advertised && published, 'the EXTERNAL listener is advertised and published');
    assert.equal(advertised[1], published[1]);
    assert.match(kafka.environment?.KAFKA_LISTENERS ?? '', new RegExp(`EXTERNAL://:${published[2]}`));
    for (const [file, text] of [
      ['README.md', read('README.md')],
      ['docker-compose.yml', read('docker-compose.yml')],
    ]) {
      const used = [...text.matchAll(/KAFKA_BROKERS=localhost:(\d+)/g)].map((m) => m[1]);
      assert.ok(used.length > 0, file);
      assert.deepEqual([...new Set(used)], [published[1]], `${file}: KAFKA_BROKERS on the host`);
    }
  });

  it('keeps the host build out of the image', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', 'data']) assert.ok(ignored.includes(entry), entry);
  });
});
