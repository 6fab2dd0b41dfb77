// test-lane: parallel
// docker-compose.yml and the Dockerfile cannot run here (no Docker), so their wiring is checked by
// parsing them: dependencies and their conditions, addresses and ports, the database credentials the
// server uses, the worker's environment against the contract, profiles, secrets, that the image
// runs the same entry modules as the npm scripts, and that the Temporal services read the very files
// (deploy/temporal/) and versions that `npm run cluster` runs natively.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE } from '../../src/shared/defaults';
import { DEFAULT_TOKEN_AUDIENCE, PERMISSIONS_CLAIM } from '../../src/shared/roles';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../../src/shared/search-attributes';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../scripts/dev-server';
import {
  CLUSTER_CODEC_URL,
  CLUSTER_PORTS,
  CLUSTER_UI_URL,
  CONFIG_DIR,
  DEPLOY_DIR,
  PRODUCTION_DYNAMIC_CONFIG,
  SERVER_CONFIG_ENV,
  SERVER_CONFIG_FILE,
  SETUP_SCRIPT,
  SSO_SERVER_ARGS,
  namespaceEnv,
  schemaEnv,
  serverEnv,
  codecServerEnv,
  tunedDynamicConfig,
  uiEnv,
} from '../../scripts/cluster/layout';
import { CLUSTER_GO_MODULE_DIR, pinnedVersion } from '../../scripts/tools';
import { parseSinksFile } from '../../src/activities/sinks-file';
import { bundleHostRules, bundleLinkProblem, parseHostRules } from '../../src/policies/bundle-hosts';
import { clusterSinksText } from '../../scripts/cluster/sinks';
import { RULES_FILE, WORKER_JOB } from '../../scripts/cluster/monitoring';
import { clientTlsEnv, serverTlsEnv, uiTlsEnv } from '../../scripts/cluster/tls';
import {
  PAYLOAD_KEYS_FILE,
  SERVICE_FILES,
  SERVICE_SECRETS,
  SERVICE_SECRETS_MOUNT,
  TEMPORAL_SERVER_NAMES,
} from '../../deploy/secrets/compose-secrets';

const ROOT = path.resolve(__dirname, '../..');
const composeText = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const dockerignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8');
const packageJson = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
};

interface Healthcheck {
  test?: string[] | string;
  disable?: boolean;
}
interface Dependency {
  condition?: string;
  required?: boolean;
}
interface Service {
  image?: string;
  networks?: Record<string, { aliases?: string[] } | null> | string[];
  build?: { context: string; target?: string };
  profiles?: string[];
  depends_on?: Record<string, Dependency> | string[];
  environment?: Record<string, string | number | boolean | null>;
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  secrets?: string[];
  healthcheck?: Healthcheck;
  deploy?: { replicas?: number };
  command?: string[] | string;
  entrypoint?: string[] | string;
  container_name?: string;
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
  networks?: Record<string, { internal?: boolean } | null>;
  secrets?: Record<string, { environment?: string; file?: string }>;
}

// Compose resolves `<<:` merge keys and anchors; so does `yaml` with merge enabled.
const compose = parse(composeText, { merge: true }) as Compose;
const services = compose.services;

function service(name: string): Service {
  const found = services[name];
  assert.ok(found, `docker-compose.yml has no service "${name}"`);
  return found;
}

function env(name: string): Record<string, string> {
  const raw = service(name).environment;
  assert.ok(raw && !Array.isArray(raw), `service ${name} declares its environment as a map`);
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, String(v)]));
}

/** `${VAR:-default}` -> default; a plain value -> itself. */
function defaultOf(value: string): string {
  const match = /^\$\{[A-Z0-9_]+:-([^}]*)\}$/.exec(value);
  return match ? (match[1] as string) : value;
}

/** "127.0.0.1:8080:8080" -> { host: 8080, container: 8080 }. */
function ports(name: string): { host: number; container: number; ip?: string }[] {
  return (service(name).ports ?? []).map((spec) => {
    const parts = String(spec).split(':');
    const container = Number(parts.at(-1));
    const host = parts.length >= 2 ? Number(parts.at(-2)) : container;
    return { host, container, ip: parts.length === 3 ? parts[0] : undefined };
  });
}

function dependencies(name: string): Record<string, Dependency> {
  const deps = service(name).depends_on ?? {};
  assert.ok(!Array.isArray(deps), `service ${name} uses the long depends_on form (with conditions)`);
  return deps;
}

/** The source module of an npm script such as `tsx src/worker.ts`. */
function scriptModule(script: string): string {
  const match = /^tsx\s+(\S+\.ts)$/.exec(packageJson.scripts[script] ?? '');
  assert.ok(match, `npm script "${script}" is "tsx <file>.ts" (got ${packageJson.scripts[script]})`);
  return match[1] as string;
}

/** Where the Dockerfile's `tsc --outDir dist --rootDir .` puts a source module. */
function compiled(sourceModule: string): string {
  return `dist/${sourceModule.replace(/\.ts$/, '.js')}`;
}

const DOCS_ADMIN_SERVICES = ['worker', 'emulator', 'cli'];

/** The services that run Temporal's programs on the files of deploy/temporal/. */
const TEMPORAL_SERVICES = ['temporal', 'temporal-schema', 'temporal-setup'];

/** A service's bind mount of a host folder of this repository: host path (absolute) and container path. */
function mounts(name: string): { host: string; container: string }[] {
  return (service(name).volumes ?? [])
    .map((spec) => spec.split(':'))
    .filter(([source]) => source?.startsWith('./'))
    .map(([source, container]) => ({ host: path.resolve(ROOT, source as string), container: container as string }));
}

/** Where a path inside a service's container comes from on the host (through its bind mounts). */
function hostPathOf(name: string, containerPath: string): string {
  const mount = mounts(name).find((m) => containerPath === m.container || containerPath.startsWith(`${m.container}/`));
  assert.ok(mount, `${containerPath} in ${name} lies in a bind mount of this repository`);
  return path.join(mount.host, path.relative(mount.container, containerPath));
}

/** The setup.sh a job runs: `sh <script>`, or `sh -c '... exec sh <script> "$$@"' <arg>` (with a token). */
function setupScriptOf(name: string): string {
  const [shell, second = '', line = ''] = [service(name).entrypoint ?? []].flat();
  assert.equal(shell, 'sh');
  if (second !== '-c') return second;
  const script = /exec sh (\S+) "\$\$@"$/.exec(line)?.[1];
  assert.ok(script, `${name} execs setup.sh`);
  return script;
}

/** `${SECRETS_DIR:-./secrets}/<folder>` mounts of a service: folder ('' for the whole) and container path. */
function secretMounts(name: string): { folder: string; container: string; readOnly: boolean }[] {
  return (service(name).volumes ?? []).flatMap((spec) => {
    const match = /^\$\{SECRETS_DIR:-\.\/secrets\}(?:\/([a-z-]+))?:([^:]+)(:ro)?$/.exec(spec);
    return match ? [{ folder: match[1] ?? '', container: match[2] as string, readOnly: match[3] === ':ro' }] : [];
  });
}

/** Every service `name` waits for, directly or through others. */
function waitsFor(name: string, seen = new Set<string>()): Set<string> {
  for (const target of Object.keys(dependencies(name)))
    if (!seen.has(target)) {
      seen.add(target);
      waitsFor(target, seen);
    }
  return seen;
}

/** The Go module's pinned version of a dependency (scripts/cluster/go.mod), without the v. */
function pinned(module: string): string {
  const version = pinnedVersion(readFileSync(path.join(CLUSTER_GO_MODULE_DIR, 'go.mod'), 'utf8'), module);
  assert.ok(version, `scripts/cluster/go.mod requires ${module}`);
  return version;
}

/** The variables a config template reads: {{ env "NAME" }}. */
function templateVariables(file: string): Set<string> {
  return new Set([...readFileSync(file, 'utf8').matchAll(/env "([A-Z0-9_]+)"/g)].map((m) => m[1] as string));
}

/** What the cluster passes besides the template's variables: the base environment and the program paths. */
const NOT_TEMPLATE_VARIABLES = new Set(['PATH', 'HOME', 'TZ', 'TEMPORAL_SQL_TOOL', 'TEMPORAL_CLI']);

describe('docker-compose.yml', () => {
  test('every dependency names an existing service and waits on a condition that the target can meet', () => {
    for (const [name] of Object.entries(services)) {
      for (const [target, dep] of Object.entries(dependencies(name))) {
        assert.ok(services[target], `${name} depends on unknown service ${target}`);
        assert.ok(
          ['service_healthy', 'service_completed_successfully', 'service_started'].includes(dep.condition ?? ''),
          `${name} -> ${target} has a condition`,
        );
        if (dep.condition === 'service_healthy') {
          const hasCheck = services[target]?.healthcheck?.test !== undefined || DOCS_ADMIN_SERVICES.includes(target);
          assert.ok(hasCheck, `${name} waits for ${target} to be healthy, so ${target} needs a healthcheck`);
        }
      }
    }
  });

  test('postgres keeps its data in a named volume and reports health', () => {
    const pg = service('postgresql');
    const mount = (pg.volumes ?? []).find((v) => v.endsWith(':/var/lib/postgresql/data'));
    assert.ok(mount, 'postgres data directory is a volume');
    const volumeName = mount.split(':')[0] as string;
    assert.ok(compose.volumes && volumeName in compose.volumes, `volume ${volumeName} is declared at the top level`);
    assert.match(JSON.stringify(pg.healthcheck?.test), /pg_isready/);
  });

  test('the Temporal server and the schema tool use the postgres service and its credentials', () => {
    const pg = env('postgresql');
    const server = env('temporal');
    assert.match(service('temporal').image ?? '', /^temporalio\/server:/);
    // pgx caches prepared statements per connection (lib/pq's postgres12 prepares every statement again).
    assert.equal(server.DB, 'postgres12_pgx');
    assert.equal(server.DB, serverEnv('password', PRODUCTION_DYNAMIC_CONFIG, 4).DB, 'the cluster uses the same driver');
    assert.equal(server.POSTGRES_SEEDS, 'postgresql');
    assert.equal(server.DB_PORT, '5432');
    assert.ok(service('postgresql').expose?.includes('5432'));
    assert.equal(server.POSTGRES_USER, pg.POSTGRES_USER);
    assert.equal(server.POSTGRES_PWD, pg.POSTGRES_PASSWORD);
    assert.match(
      pg.POSTGRES_PASSWORD ?? '',
      /^\$\{POSTGRES_PASSWORD:\?/,
      'the database password comes from .env and is required',
    );

    const schema = env('temporal-schema');
    assert.equal(schema.SQL_PLUGIN, server.DB);
    assert.equal(schema.SQL_HOST, server.POSTGRES_SEEDS);
    assert.equal(schema.SQL_PORT, server.DB_PORT);
    assert.equal(schema.SQL_USER, pg.POSTGRES_USER);
    assert.equal(schema.SQL_PASSWORD, pg.POSTGRES_PASSWORD);

    assert.deepEqual(dependencies('temporal-schema').postgresql, { condition: 'service_healthy' });
    assert.deepEqual(dependencies('temporal')['temporal-schema'], { condition: 'service_completed_successfully' });
  });

  test("the server's dynamic config is the mounted production.yaml, the file `npm run cluster` reads", () => {
    const dynamicConfig = env('temporal').DYNAMIC_CONFIG_FILE_PATH ?? '';
    assert.equal(hostPathOf('temporal', dynamicConfig), PRODUCTION_DYNAMIC_CONFIG);
  });

  test('gRPC and the Web UI are published on loopback; the UI points at the server', () => {
    assert.deepEqual(ports('temporal'), [{ ip: '127.0.0.1', host: 7233, container: 7233 }]);
    const ui = ports('temporal-ui');
    assert.equal(ui.length, 1);
    assert.equal(ui[0]?.container, 8080);
    assert.ok([8080, 8233].includes(ui[0]?.host ?? 0));
    assert.equal(ui[0]?.ip, '127.0.0.1');
    assert.equal(env('temporal-ui').TEMPORAL_ADDRESS, 'temporal:7233');
    assert.deepEqual(dependencies('temporal-ui').temporal, { condition: 'service_healthy' });
  });

  test("the setup job creates the namespace and registers exactly the project's search attributes", () => {
    const setup = env('temporal-setup');
    assert.equal(setup.TEMPORAL_ADDRESS, 'temporal:7233');
    const registered = (setup.DOCS_ADMIN_SEARCH_ATTRIBUTES ?? '').split(/\s+/).filter(Boolean).sort();
    assert.deepEqual(registered, Object.keys(SEARCH_ATTRIBUTE_REGISTRATION).sort());
    assert.ok(Object.values(SEARCH_ATTRIBUTE_REGISTRATION).every((type) => type === 'Keyword'));
    const scriptPath = setupScriptOf('temporal-setup');
    assert.deepEqual(service('temporal-setup').command, ['namespace']);
    const script = readFileSync(hostPathOf('temporal-setup', scriptPath), 'utf8');
    assert.match(script, /search-attribute create .*--type Keyword/);
    assert.match(script, /namespace create/);
    assert.equal(
      setup.TEMPORAL_NAMESPACE,
      env('worker').TEMPORAL_NAMESPACE,
      'setup prepares the namespace the worker uses',
    );
    assert.deepEqual(dependencies('temporal-setup').temporal, { condition: 'service_healthy' });
  });

  test('the worker: two replicas of the built image, wired to temporal:7233, after setup', () => {
    const worker = service('worker');
    assert.equal(worker.deploy?.replicas, 2);
    assert.equal(worker.build?.context, '.');
    assert.match(
      dockerfile,
      new RegExp(`^FROM \\S+ AS ${worker.build?.target}$`, 'm'),
      'the build target is a Dockerfile stage',
    );
    assert.equal(worker.container_name, undefined, 'replicas cannot share a container name');
    assert.equal(worker.ports, undefined, 'replicas cannot share a published port');

    const workerEnv = env('worker');
    const [host, port] = (workerEnv.TEMPORAL_ADDRESS ?? '').split(':');
    assert.equal(host, 'temporal');
    assert.equal(Number(port), ports('temporal')[0]?.container, "TEMPORAL_ADDRESS is the server's gRPC port");

    const deps = dependencies('worker');
    assert.deepEqual(deps['temporal-setup'], { condition: 'service_completed_successfully' });
    assert.deepEqual(deps.emulator, { condition: 'service_healthy', required: false });
  });

  test('every contract variable reaches the worker, with the contract defaults', () => {
    const workerEnv = env('worker');
    for (const name of [
      'ADMIN_API_URL',
      'TEMPORAL_ADDRESS',
      'TEMPORAL_NAMESPACE',
      'TEMPORAL_TASK_QUEUE',
      'AGENT_RATE_LIMIT',
      'METRICS_PORT',
    ]) {
      assert.ok(workerEnv[name], `worker sets ${name}`);
    }
    assert.equal(defaultOf(workerEnv.TEMPORAL_NAMESPACE as string), DEFAULT_NAMESPACE);
    assert.equal(defaultOf(workerEnv.TEMPORAL_TASK_QUEUE as string), DEFAULT_TASK_QUEUE);
    assert.equal(defaultOf(workerEnv.AGENT_RATE_LIMIT as string), '100/1h');
    assert.match(workerEnv.ADMIN_API_URL as string, /^\$\{ADMIN_API_URL:-https?:\/\/[^}]+\}$/);

    // Worker versioning is on in the production-shaped deployment (off only where no name is configured).
    assert.equal(defaultOf(workerEnv.TEMPORAL_DEPLOYMENT_NAME as string), 'docs-admin');
    assert.equal(
      defaultOf(workerEnv.TEMPORAL_WORKER_BUILD_ID as string),
      '',
      'the build id defaults to one derived from the code',
    );

    // Prometheus can scrape every replica inside the network.
    assert.equal(workerEnv.METRICS_HOST, '0.0.0.0');
    assert.ok(service('worker').expose?.includes(workerEnv.METRICS_PORT as string));
  });

  test("the worker's sinks file is deploy/sinks.yaml, mounted read-only; its sinks write into the deployments volume", () => {
    const workerEnv = env('worker');
    const mount = (service('worker').volumes ?? []).find((v) => v.endsWith(`:${workerEnv.KEEPER_SINKS_FILE}:ro`));
    assert.equal(mount, `./deploy/sinks.yaml:${workerEnv.KEEPER_SINKS_FILE}:ro`);
    const table = parseSinksFile(readFileSync(path.join(ROOT, 'deploy/sinks.yaml'), 'utf8'), 'deploy/sinks.yaml');
    assert.deepEqual([...table.invalid], [], 'every example sink is valid');
    assert.deepEqual(
      [...table.sinks.values()].map((s) => s.type),
      ['file', 'mirror'],
    );
    const volume = (service('worker').volumes ?? []).find((v) => v.startsWith('deployments:'))!.split(':')[1]!;
    for (const sink of table.sinks.values()) assert.ok('root' in sink && sink.root === volume, sink.type);
    // `npm run cluster` writes the same two sinks below its data directory.
    const cluster = parseSinksFile(clusterSinksText('/data/cluster/deployments'), 'sinks.yaml');
    assert.deepEqual([...cluster.invalid], []);
    assert.deepEqual([...cluster.sinks.keys()], [...table.sinks.keys()]);
    // Each serves the same domains (the README's examples), and only those.
    const domainsOf = (t: typeof table) => [...t.sinks.values()].map((s) => s.domains);
    assert.deepEqual(domainsOf(table), [['docs.example.com'], ['docs.internal']]);
    assert.deepEqual(domainsOf(cluster), domainsOf(table));
  });

  test('ADMIN_API_KEY comes from a secret fed by the environment, never from the file', () => {
    const workerEnv = env('worker');
    assert.equal(workerEnv.ADMIN_API_KEY, undefined, 'no key in the environment block');
    const secretName = (service('worker').secrets ?? [])[0];
    assert.ok(secretName, 'the worker mounts a secret');
    assert.equal(workerEnv.ADMIN_API_KEY_FILE, `/run/secrets/${secretName}`);
    assert.deepEqual(compose.secrets?.[secretName], { environment: 'ADMIN_API_KEY' });
    // The worker reads the file itself (and re-reads it when the secret rotates): the image must not
    // copy it into ADMIN_API_KEY, which would also make the worker refuse to start (both set).
    assert.doesNotMatch(dockerfile, /export ADMIN_API_KEY\b/);

    assert.doesNotMatch(composeText, /mint_[A-Za-z0-9]/, 'no literal admin key in docker-compose.yml');
    assert.doesNotMatch(dockerfile, /mint_[A-Za-z0-9]/, 'no literal admin key in the Dockerfile');
    assert.match(dockerignore, /^\.env$/m, '.env stays out of the build context');
  });

  test('payload encryption: worker, CLI, codec server and webhook receiver read one key file from a read-only folder mount', () => {
    const file = env('worker').PAYLOAD_ENCRYPTION_KEYS_FILE;
    assert.ok(file, 'the worker encrypts payloads');
    assert.equal(path.posix.basename(file), PAYLOAD_KEYS_FILE);
    const folder: string = path.posix.dirname(file);
    for (const name of ['worker', 'cli', 'codec-server', 'webhooks']) {
      assert.equal(env(name).PAYLOAD_ENCRYPTION_KEYS_FILE, file, `${name} has the same key file`);
      const mount = secretMounts(name).find((m) => m.container === folder);
      assert.deepEqual(mount, { folder: 'payload', container: folder, readOnly: true }, name);
    }
    assert.match(readFileSync(path.join(ROOT, '.gitignore'), 'utf8'), /^secrets\/$/m, 'key files stay out of git');
    assert.match(dockerignore, /^secrets$/m, 'and out of the build context');
    assert.doesNotMatch(composeText, /PAYLOAD_ENCRYPTION_KEYS_FILE: [^*/]/, 'no key material in the file');
  });

  test('the codec server: the module of `npm run codec-server`, published for the browser, CORS for the UI only', () => {
    const codec = service('codec-server');
    assert.deepEqual(codec.entrypoint, ['node', compiled(scriptModule('codec-server'))]);
    const command = [codec.command ?? []].flat();
    assert.equal(command[command.indexOf('--host') + 1], '0.0.0.0');
    const port = Number(command[command.indexOf('--port') + 1]);
    assert.deepEqual(ports('codec-server'), [{ host: port, container: port, ip: '127.0.0.1' }]);
    const ui = ports('temporal-ui')[0];
    assert.equal(defaultOf(env('codec-server').CODEC_SERVER_CORS_ORIGINS as string), `http://127.0.0.1:${ui?.host}`);
    // Only the namespace of the deployment's workers, whose keys it holds (the worker's TEMPORAL_NAMESPACE).
    assert.equal(env('codec-server').CODEC_SERVER_NAMESPACES, '${TEMPORAL_NAMESPACE:-default}');
    assert.equal(env('worker').TEMPORAL_NAMESPACE, '${TEMPORAL_NAMESPACE:-default}');
    // HTTPS: the Web UI passes a person's token only to an https:// codec endpoint.
    assert.equal(defaultOf(env('temporal-ui').TEMPORAL_CODEC_ENDPOINT as string), `https://localhost:${port}`);
    assert.match(JSON.stringify(codec.healthcheck?.test), new RegExp(`https://127\\.0\\.0\\.1:${port}/health`));
  });

  test('the codec server requires a bearer token from a file that the secrets job makes in its folder', () => {
    const tokenFile = env('codec-server').CODEC_SERVER_TOKEN_FILE;
    assert.ok(tokenFile, 'a token is required (no --no-auth)');
    assert.ok(!JSON.stringify(service('codec-server').command).includes('--no-auth'));
    assert.equal(env('codec-server').CODEC_SERVER_TOKEN, undefined, 'no token in the compose file');
    assert.equal(tokenFile, `${SERVICE_SECRETS_MOUNT}/${SERVICE_FILES.codecToken}`);
    assert.ok(SERVICE_SECRETS['codec-server']?.codecToken, 'the secrets job makes it in the codec server folder');
  });

  test('one secrets job makes every secret, as root, with the compose-secrets module and openssl', () => {
    const job = service('secrets-init');
    assert.deepEqual(job.build, { context: '.', target: 'secrets' });
    assert.match(dockerfile, /^FROM \S+ AS secrets$/m, 'a Dockerfile stage');
    assert.match(dockerfile, /apt-get install -y --no-install-recommends openssl/);
    assert.notEqual(job.image, service('worker').image, 'not the runtime image, which has no openssl');
    assert.equal((job as { user?: string }).user, 'root');
    const [node, module, folder] = [job.entrypoint ?? []].flat();
    assert.deepEqual([node, module], ['node', compiled('deploy/secrets/compose-secrets.ts')]);
    assert.deepEqual(secretMounts('secrets-init'), [{ folder: '', container: folder, readOnly: false }]);
    assert.equal(env('secrets-init').TEMPORAL_NAMESPACE, env('worker').TEMPORAL_NAMESPACE);
    assert.equal(env('secrets-init').TEMPORAL_AUTH_CALLBACK_URL, env('temporal-ui').TEMPORAL_AUTH_CALLBACK_URL);
    for (const name of [...Object.keys(SERVICE_SECRETS), 'sso-provider'].filter((n) => services[n]))
      assert.ok(waitsFor(name).has('secrets-init'), `${name} starts after its secrets exist`);
  });

  test('the emulator, the CLI and the webhook receiver exist only under their profiles', () => {
    const defaults = Object.entries(services)
      .filter(([, s]) => !s.profiles || s.profiles.length === 0)
      .map(([name]) => name)
      .sort();
    assert.deepEqual(defaults, [
      'codec-server',
      'postgresql',
      'prometheus',
      'secrets-init',
      'sso-provider',
      'temporal',
      'temporal-schema',
      'temporal-setup',
      'temporal-setup-token',
      'temporal-ui',
      'worker',
    ]);
    assert.deepEqual(service('emulator').profiles, ['emulator']);
    assert.deepEqual(service('cli').profiles, ['cli']);
    assert.deepEqual(service('webhooks').profiles, ['webhooks']);
  });

  test('the emulator listens on 0.0.0.0 in its container and the documented ADMIN_API_URL reaches it', () => {
    const emulatorSource = readFileSync(path.join(ROOT, 'emulator/main.ts'), 'utf8');
    assert.match(emulatorSource, /'EMULATOR_HOST'/);
    assert.match(emulatorSource, /'EMULATOR_PORT'/);
    const emulatorEnv = env('emulator');
    assert.equal(emulatorEnv.EMULATOR_HOST, '0.0.0.0');
    const url = `http://emulator:${emulatorEnv.EMULATOR_PORT}`;
    assert.equal(emulatorEnv.EMULATOR_PUBLIC_URL, url, 'bundle links name a host the workers resolve');
    const workerHosts = parseHostRules(defaultOf(env('worker').BUNDLE_ALLOWED_HOSTS as string));
    assert.equal(
      bundleLinkProblem(`${emulatorEnv.EMULATOR_PUBLIC_URL}/bundles/j.tar.gz?sig=x`, bundleHostRules(url, workerHosts)),
      undefined,
      "the emulator's bundle links are on the admin API's host: the workers fetch them with nothing listed",
    );
    assert.ok(composeText.includes(`ADMIN_API_URL=${url}\n`), `the header tells users to set ADMIN_API_URL=${url}`);
    assert.match(
      JSON.stringify(service('emulator').healthcheck?.test),
      new RegExp(`127\\.0\\.0\\.1:${emulatorEnv.EMULATOR_PORT}/`),
    );
    assert.deepEqual(service('emulator').command, ['node', compiled(scriptModule('emulator'))]);
  });

  test('the CLI service runs the npm run cli module', () => {
    assert.deepEqual(service('cli').entrypoint, ['node', compiled(scriptModule('cli'))]);
    assert.equal(env('cli').TEMPORAL_ADDRESS, 'temporal:7233');
  });
});

describe('one source for docker-compose.yml and npm run cluster', () => {
  test('the server, the schema job and the setup job mount deploy/temporal, the folder the cluster reads', () => {
    for (const name of TEMPORAL_SERVICES) {
      assert.ok(
        mounts(name).some((m) => m.host === DEPLOY_DIR),
        `${name} mounts ${path.relative(ROOT, DEPLOY_DIR)}`,
      );
      assert.ok(
        (service(name).volumes ?? []).some((v) => v.startsWith('./deploy/temporal:') && v.endsWith(':ro')),
        `${name} mounts it read-only`,
      );
    }
  });

  test("the server starts with the cluster's command line, on the same config template", () => {
    const [program, rootFlag, root = '', ...rest] = [service('temporal').command ?? []].flat();
    assert.equal(program, 'temporal-server');
    assert.equal(rootFlag, '--root');
    assert.deepEqual(rest, SSO_SERVER_ARGS, 'after --root, the arguments the cluster passes with --sso');
    const configFile = path.posix.join(root, CONFIG_DIR, `${SERVER_CONFIG_ENV}.yaml`);
    assert.equal(hostPathOf('temporal', configFile), SERVER_CONFIG_FILE);
    // The entrypoint only sets the addresses to bind and announce, then execs the command.
    assert.match(
      [service('temporal').entrypoint ?? []].flat().join(' '),
      /export TEMPORAL_BROADCAST_ADDRESS="\$\$internal" BIND_ON_IP="\$\$internal" && exec "\$\$@"/,
    );
  });

  test('the schema and setup jobs run setup.sh, the script the cluster runs, with its two phases', () => {
    for (const [name, phase] of [
      ['temporal-schema', 'schema'],
      ['temporal-setup', 'namespace'],
    ] as const) {
      assert.equal(hostPathOf(name, setupScriptOf(name)), SETUP_SCRIPT);
      assert.deepEqual(service(name).command, [phase]);
      assert.match(
        readFileSync(SETUP_SCRIPT, 'utf8'),
        new RegExp(`^\\s+${phase}\\)`, 'm'),
        `setup.sh has a ${phase} phase`,
      );
    }
  });

  test('both pass the variables the server config template reads, and no others', () => {
    const variables = templateVariables(SERVER_CONFIG_FILE);
    const composeServer = Object.keys(env('temporal'));
    const clusterServer = Object.keys(serverEnv('password', PRODUCTION_DYNAMIC_CONFIG, 4)).filter(
      (k) => !NOT_TEMPLATE_VARIABLES.has(k),
    );
    for (const [who, names] of [
      ['docker-compose.yml', composeServer],
      ['npm run cluster', clusterServer],
    ] as const) {
      const unknown = names.filter((name) => !variables.has(name));
      assert.deepEqual(unknown, [], `${who} sets only variables config.yaml reads`);
    }
    for (const name of [
      'DB',
      'POSTGRES_SEEDS',
      'DB_PORT',
      'POSTGRES_USER',
      'POSTGRES_PWD',
      'DYNAMIC_CONFIG_FILE_PATH',
    ]) {
      assert.ok(composeServer.includes(name) && clusterServer.includes(name), `both set ${name}`);
    }
    // Compose's BIND_ON_IP is the server's address on its internal network, which only its entrypoint knows.
    assert.ok(clusterServer.includes('BIND_ON_IP') && variables.has('FRONTEND_BIND_ON_IP'));
  });

  test('the setup phases get the same variables from compose as from the cluster', () => {
    const clusterOnly = (vars: NodeJS.ProcessEnv) =>
      Object.keys(vars)
        .filter((k) => !NOT_TEMPLATE_VARIABLES.has(k))
        .sort();
    assert.deepEqual(clusterOnly(schemaEnv('password')), Object.keys(env('temporal-schema')).sort());
    // With the cluster's --tls --sso: a client certificate, and TLS on beside the token (TEMPORAL_API_KEY,
    // which compose's setup reads from its file).
    assert.deepEqual(
      [...clusterOnly(namespaceEnv('temporal')), ...Object.keys(clientTlsEnv()), 'TEMPORAL_TLS'].sort(),
      Object.keys(env('temporal-setup')).sort(),
    );
    assert.equal(env('temporal-setup').TEMPORAL_TLS, 'true');
    assert.equal(schemaEnv('password').SQL_PLUGIN, env('temporal-schema').SQL_PLUGIN);
    assert.equal(
      namespaceEnv('temporal').DOCS_ADMIN_SEARCH_ATTRIBUTES,
      env('temporal-setup').DOCS_ADMIN_SEARCH_ATTRIBUTES,
    );
  });

  test('the images are the versions the cluster builds (scripts/cluster/go.mod)', () => {
    const server = pinned('go.temporal.io/server');
    assert.equal(server, '1.32.2');
    assert.equal(defaultOf((service('temporal').image ?? '').replace(/^temporalio\/server:/, '')), server);
    for (const name of ['temporal-schema', 'temporal-setup']) {
      const tag = defaultOf((service(name).image ?? '').replace(/^temporalio\/admin-tools:/, ''));
      assert.ok(
        tag === server || tag.startsWith(`${server}-`),
        `${name}: admin tools ${tag} are those of server ${server}`,
      );
    }
    const ui = defaultOf((service('temporal-ui').image ?? '').replace(/^temporalio\/ui:/, ''));
    assert.equal(ui, pinned('github.com/temporalio/ui-server/v2'));
  });

  test("the production dynamic config carries none of the dev server's tuning; --tuned adds all of it", () => {
    const production = (parse(readFileSync(PRODUCTION_DYNAMIC_CONFIG, 'utf8')) ?? {}) as Record<string, unknown>;
    // Temporal matches dynamic config keys case-insensitively.
    const productionKeys = new Set(Object.keys(production).map((k) => k.toLowerCase()));
    const devKeys = DEV_SERVER_DYNAMIC_CONFIG.map((entry) => entry.slice(0, entry.indexOf('=')));
    assert.ok(devKeys.includes('matching.enableFairness') && devKeys.includes('matching.numTaskqueueReadPartitions'));
    for (const key of devKeys)
      assert.ok(!productionKeys.has(key.toLowerCase()), `production.yaml leaves ${key} at its default`);

    const tuned = parse(tunedDynamicConfig(production)) as Record<string, { value: unknown }[]>;
    for (const entry of DEV_SERVER_DYNAMIC_CONFIG) {
      const [key, value] = [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)];
      assert.deepEqual(tuned[key], [{ value: JSON.parse(value) }], `--tuned sets ${key}`);
    }
    for (const key of Object.keys(production)) assert.deepEqual(tuned[key], production[key], `--tuned keeps ${key}`);
  });
});

describe('the UI server config template (deploy/temporal/ui.yaml)', () => {
  test('renders, with its defaults, to the plain scalars the UI server reads (a formatter must not touch it)', () => {
    const template = readFileSync(path.join(ROOT, 'deploy/temporal/ui.yaml'), 'utf8');
    const expression = /\{\{ env "(\w+)" \| default "([^"]*)" \}\}/g;
    const variables = [...template.matchAll(expression)].map((m) => m[1]);
    assert.deepEqual(variables.sort(), [
      'TEMPORAL_ADDRESS',
      'TEMPORAL_AUTH_CALLBACK_URL',
      'TEMPORAL_AUTH_CLIENT_ID',
      'TEMPORAL_AUTH_CLIENT_SECRET',
      'TEMPORAL_AUTH_ENABLED',
      'TEMPORAL_AUTH_ISSUER_URL',
      'TEMPORAL_AUTH_PROVIDER_LABEL',
      'TEMPORAL_AUTH_PROVIDER_URL',
      'TEMPORAL_CODEC_ENDPOINT',
      'TEMPORAL_CODEC_PASS_ACCESS_TOKEN',
      'TEMPORAL_DEFAULT_NAMESPACE',
      'TEMPORAL_TLS_CA',
      'TEMPORAL_TLS_CERT',
      'TEMPORAL_TLS_ENABLE_HOST_VERIFICATION',
      'TEMPORAL_TLS_KEY',
      'TEMPORAL_TLS_SERVER_NAME',
      'TEMPORAL_UI_HOST',
      'TEMPORAL_UI_PORT',
    ]);
    const rendered = parse(template.replace(expression, (_, _name: string, fallback: string) => fallback)) as Record<
      string,
      unknown
    >;
    assert.deepEqual(
      {
        address: rendered.temporalGrpcAddress,
        host: rendered.host,
        port: rendered.port,
        namespace: rendered.defaultNamespace,
        codec: rendered.codec,
      },
      {
        address: '127.0.0.1:7233',
        host: '127.0.0.1',
        port: 8080,
        namespace: 'default',
        codec: { endpoint: null, passAccessToken: false },
      },
    );
    // Unset, the TLS values are empty: the UI server connects without TLS (and verifies the host when it does).
    assert.deepEqual(rendered.tls, {
      caFile: null,
      certFile: null,
      keyFile: null,
      serverName: null,
      enableHostVerification: true,
    });
    // Unset, no login: the plain cluster.
    assert.equal((rendered.auth as { enabled: boolean }).enabled, false);
    // As the cluster renders it: the UI decodes through the cluster's codec server.
    const cluster = uiEnv();
    const clusterRendered = parse(
      template.replace(expression, (_, name: string, fallback: string) => cluster[name] ?? fallback),
    ) as { codec: { endpoint: string } };
    assert.equal(clusterRendered.codec.endpoint, CLUSTER_CODEC_URL);
    assert.equal(CLUSTER_CODEC_URL, `http://127.0.0.1:${CLUSTER_PORTS.codecServer}`);
    assert.equal(codecServerEnv().CODEC_SERVER_CORS_ORIGINS, CLUSTER_UI_URL, 'the codec server lets the UI in');
    assert.equal(codecServerEnv().CODEC_SERVER_NAMESPACES, 'default', "only the cluster's namespace");
  });
});

describe('Dockerfile', () => {
  const stages = [...dockerfile.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/gm)].map((m) => ({
    image: m[1],
    name: m[2],
  }));
  const runtimeStart = dockerfile.lastIndexOf('\nFROM ');
  const runtime = dockerfile.slice(runtimeStart);

  test('multi-stage on node:24 slim at a pinned version, runtime without dev dependencies, as a non-root user', () => {
    assert.ok(stages.length >= 2, 'multi-stage');
    assert.match(dockerfile, /^ARG NODE_IMAGE=node:24\.\d+\.\d+-slim$/m);
    assert.ok(stages.every((s) => s.image === '${NODE_IMAGE}'));
    assert.match(dockerfile, /npm ci --omit=dev/);
    assert.match(runtime, /^USER (?!root)\S+$/m);
    assert.match(runtime, /^HEALTHCHECK /m);
  });

  test("CMD runs the module of `npm run worker`, compiled where the build stage's tsc puts it", () => {
    assert.match(dockerfile, /tsc -p tsconfig\.json --noEmit false --outDir dist --rootDir \.(\s|$)/m);
    const cmd = /^CMD (\[.*\])$/m.exec(runtime);
    assert.ok(cmd, 'CMD in exec form');
    assert.deepEqual(JSON.parse(cmd[1] as string), ['node', compiled(scriptModule('worker'))]);
    // No entrypoint of its own: the node image's docker-entrypoint.sh execs the command (signals reach node).
    assert.doesNotMatch(runtime, /^ENTRYPOINT /m);
  });

  test("the stand-ins have targets of their own: the worker's build copies src/ only", () => {
    const stage = (name: string) => {
      const start = dockerfile.search(new RegExp(`^FROM \\S+ AS ${name}$`, 'm'));
      assert.ok(start >= 0, `a stage ${name}`);
      const next = dockerfile.indexOf('\nFROM ', start + 1);
      return dockerfile.slice(start, next < 0 ? undefined : next);
    };
    assert.deepEqual(
      [...stage('build').matchAll(/^COPY (?!--from)(.*) \S+$/gm)].map((m) => m[1]),
      ['package.json package-lock.json', 'tsconfig.json', 'src'],
      "the worker image's build stage copies no stand-in",
    );
    const cmd = /^CMD (\[.*\])$/m.exec(stage('sso-provider'));
    assert.deepEqual(JSON.parse(cmd?.[1] ?? '[]'), ['node', compiled(scriptModule('sso-provider'))]);
    assert.match(stage('tools-build'), /^COPY sso-provider \.\/sso-provider$/m);
    assert.match(stage('tools-build'), /^COPY deploy\/secrets \.\/deploy\/secrets$/m);
  });

  test('the build context leaves out dependencies, local state and secrets', () => {
    for (const entry of ['node_modules', '.tools', '.data', '.env', '.git']) {
      assert.match(dockerignore, new RegExp(`^${entry.replace('.', '\\.')}$`, 'm'), `.dockerignore lists ${entry}`);
    }
  });
});

describe('docker-compose.yml: Prometheus with the shipped rules', () => {
  const promConfig = parse(readFileSync(path.join(ROOT, 'deploy/prometheus/prometheus.yml'), 'utf8')) as {
    rule_files: string[];
    scrape_configs: { job_name: string; dns_sd_configs?: { names: string[]; port: number }[] }[];
  };

  test('mounts deploy/prometheus (the rules and their config) read-only and binds its UI to 127.0.0.1', () => {
    const prometheus = service('prometheus');
    assert.ok(prometheus.volumes?.includes('./deploy/prometheus:/etc/prometheus:ro'));
    assert.ok(
      (prometheus.command as string[]).includes('--config.file=/etc/prometheus/prometheus.yml'),
      'reads the shipped config',
    );
    assert.deepEqual(prometheus.ports, ['127.0.0.1:9090:9090']);
    assert.deepEqual(promConfig.rule_files, ['alerts.yml']);
  });

  test('scrapes every worker replica on its METRICS_PORT, as the job the alert rules watch', () => {
    const job = promConfig.scrape_configs.find((c) => c.job_name === WORKER_JOB);
    assert.ok(job, `a scrape job named ${WORKER_JOB}`);
    assert.deepEqual(job.dns_sd_configs?.[0]?.names, ['worker']);
    assert.equal(String(job.dns_sd_configs?.[0]?.port), env('worker').METRICS_PORT);
    assert.equal(env('worker').METRICS_HOST, '0.0.0.0', 'the worker listens beyond its container');
    assert.match(readFileSync(RULES_FILE, 'utf8'), new RegExp(`up\\{job="${WORKER_JOB}"\\}`));
  });
});

// ---- closed by default: sign-on, mutual TLS, a secret per service, the internal network --------------------
// The shape of `npm run cluster -- --tls --sso`, in docker-compose.yml itself; docker-compose.sso.yml adds nothing.

const ssoText = readFileSync(path.join(ROOT, 'docker-compose.sso.yml'), 'utf8');

/**
 * scripts/cluster/sso.ts read as text (the names are what matter, and the test stays a parse of files): the keys
 * of the object a function returns, and its constants.
 */
const clusterSso = readFileSync(path.join(ROOT, 'scripts/cluster/sso.ts'), 'utf8');
function clusterSsoKeys(fn: string): string[] {
  const start = clusterSso.indexOf(`export function ${fn}(`);
  assert.ok(start >= 0, `scripts/cluster/sso.ts exports ${fn}`);
  const body = clusterSso.slice(start, clusterSso.indexOf('\n}\n', start));
  return [...body.matchAll(/\b([A-Z][A-Z0-9_]+):/g)].map((m) => m[1] as string).sort();
}
const CLUSTER_SERVICES = Object.fromEntries(
  [...(/SERVICES = \{([^}]*)\}/.exec(clusterSso)?.[1] ?? '').matchAll(/(\w+): '([^']+)'/g)].map((m) => [m[1], m[2]]),
);
const CLUSTER_UI_CLIENT_ID = /UI_CLIENT_ID = '([^']+)'/.exec(clusterSso)?.[1];

/** The issuer every component of the compose file uses (read when a test asks: a parse failure fails that test). */
const ssoIssuer = (): string => defaultOf(env('sso-provider').SSO_ISSUER ?? '');
const SSO_MOUNT = '/run/docs-admin/sso';

/** A file below the service's own secrets folder, by the name the secrets job gives it there. */
const ownFile = (file: string) => `${SERVICE_SECRETS_MOUNT}/${file}`;

/** The clients of the frontend and the TLS variable names each reads (envconfig's, the UI image's). */
const FRONTEND_CLIENTS: Record<string, Record<string, string>> = {
  worker: clientTlsEnv(),
  cli: clientTlsEnv(),
  webhooks: clientTlsEnv(),
  'temporal-setup': clientTlsEnv(),
  'temporal-ui': uiTlsEnv(),
};

describe('docker-compose.yml is closed by default', () => {
  test("the server's authorizer is on: config.yaml's authorization block, the cluster's --sso variables and services", () => {
    const server = env('temporal');
    const template = readFileSync(SERVER_CONFIG_FILE, 'utf8');
    const block = template.slice(template.indexOf('{{- if env "TEMPORAL_JWT_KEY_SOURCE1" }}'));
    assert.match(block, /^ {2}authorization:\n[\s\S]*?authorizer: default\n\s+claimMapper: default\n/m);
    for (const name of clusterSsoKeys('ssoServerEnv'))
      assert.ok(server[name], `compose sets ${name} as the cluster does`);
    assert.equal(defaultOf(server.TEMPORAL_JWT_KEY_SOURCE1 as string), `${ssoIssuer()}/jwks`);
    assert.equal(defaultOf(server.TEMPORAL_JWT_AUDIENCE as string), DEFAULT_TOKEN_AUDIENCE);
    assert.equal(defaultOf(server.TEMPORAL_JWT_PERMISSIONS_CLAIM as string), PERMISSIONS_CLAIM);
    assert.match(template, /env "TEMPORAL_JWT_PERMISSIONS_CLAIM" \| default "permissions"/);
    assert.ok([service('temporal').command ?? []].flat().includes('internal-frontend'));
    assert.doesNotMatch(composeText, /TEMPORAL_AUTH_ENABLED: .false/);
  });

  test("the frontend requires mutual TLS: config.yaml's tls block with the cluster's --tls variables", () => {
    const server = env('temporal');
    assert.deepEqual(
      Object.keys(serverTlsEnv()).filter((name) => !server[name]),
      [],
      "every variable the cluster's --tls sets",
    );
    assert.equal(server.TEMPORAL_TLS_REQUIRE_CLIENT_AUTH, 'true');
    assert.equal(server.TEMPORAL_TLS_FRONTEND_CERT, ownFile(SERVICE_FILES.serverCert));
    assert.equal(server.TEMPORAL_TLS_FRONTEND_KEY, ownFile(SERVICE_FILES.serverKey));
    assert.equal(server.TEMPORAL_TLS_CLIENT1_CA_CERT, ownFile(SERVICE_FILES.ca));
    assert.equal(server.TEMPORAL_TLS_SERVER_CA_CERT, ownFile(SERVICE_FILES.ca));
    assert.ok(TEMPORAL_SERVER_NAMES.includes(server.TEMPORAL_TLS_FRONTEND_SERVER_NAME as string));
    assert.match(
      readFileSync(SERVER_CONFIG_FILE, 'utf8'),
      /\{\{- if env "TEMPORAL_TLS_FRONTEND_CERT" \}\}\n\s+# Mutual TLS/,
    );
    assert.equal(SERVICE_SECRETS.temporal?.certificate, 'server');
  });

  test('every client of the frontend calls it with a certificate of its own, by a name on the server certificate', () => {
    const address = env('worker').TEMPORAL_ADDRESS ?? '';
    assert.ok(TEMPORAL_SERVER_NAMES.includes(address.split(':')[0] as string));
    for (const [name, names] of Object.entries(FRONTEND_CLIENTS)) {
      const vars = env(name);
      assert.deepEqual(
        Object.keys(names).filter((v) => !vars[v]),
        [],
        `${name} sets the cluster's TLS names`,
      );
      const files = Object.keys(names)
        .map((v) => vars[v] as string)
        .filter((v) => v.startsWith('/'));
      assert.deepEqual(
        files.sort(),
        [ownFile(SERVICE_FILES.ca), ownFile(SERVICE_FILES.clientCert), ownFile(SERVICE_FILES.clientKey)].sort(),
        `${name}: its own folder's certificate`,
      );
      const serverName = vars.TEMPORAL_TLS_SERVER_NAME as string;
      assert.equal(serverName, env('temporal').TEMPORAL_TLS_FRONTEND_SERVER_NAME, `${name} verifies the server's name`);
      assert.equal(SERVICE_SECRETS[name]?.certificate, 'client', `the secrets job gives ${name} a client certificate`);
    }
    assert.equal(env('temporal-ui').TEMPORAL_TLS_ENABLE_HOST_VERIFICATION, 'true');
  });

  test('each service mounts only its own secrets folder, read-only; the CA and the directory stay with the job and the provider', () => {
    const holders = Object.keys(services).filter((name) => secretMounts(name).length > 0);
    for (const name of holders) {
      const folders = secretMounts(name)
        .map((m) => m.folder)
        .sort();
      const expected =
        name === 'secrets-init'
          ? ['']
          : name === 'sso-provider'
            ? ['sso']
            : name === 'temporal-setup-token'
              ? ['temporal-setup']
              : [name, ...(env(name).PAYLOAD_ENCRYPTION_KEYS_FILE ? ['payload'] : [])].sort();
      assert.deepEqual(folders, expected, `${name} mounts ${expected.join(', ') || 'the whole folder'}`);
      for (const m of secretMounts(name)) {
        if (m.folder === name) assert.equal(m.container, SERVICE_SECRETS_MOUNT, name);
        // Only the job writes, and the token job the setup's token beside the setup's own secret.
        if (name !== 'secrets-init' && name !== 'temporal-setup-token')
          assert.ok(m.readOnly, `${name}: ${m.folder} read-only`);
      }
    }
    assert.deepEqual(secretMounts('temporal-setup-token'), [
      { folder: 'temporal-setup', container: SERVICE_SECRETS_MOUNT, readOnly: false },
    ]);
    // Every service of the secrets job holds its folder; nothing mounts ca/ (the CA's key).
    for (const name of Object.keys(SERVICE_SECRETS))
      assert.ok(
        secretMounts(name).some((m) => m.folder === name),
        `${name} mounts its folder`,
      );
    assert.doesNotMatch(composeText, /secrets\}\/ca[:/]/);
    assert.doesNotMatch(composeText, /\b(SSO_DIR|PAYLOAD_KEYS_DIR|CODEC_TLS_DIR)\b/, "the earlier releases' folders");
  });

  test('each program signs in as a client of its own, with the secret in its own folder', () => {
    const clients: Record<string, string> = {};
    for (const [name, { oidcClient }] of Object.entries(SERVICE_SECRETS)) {
      if (!oidcClient || name === 'temporal-ui' || name === 'temporal-setup') continue;
      const vars = env(name);
      for (const variable of clusterSsoKeys('serviceEnv')) assert.ok(vars[variable], `${name} gets ${variable}`);
      assert.equal(defaultOf(vars.TEMPORAL_OIDC_ISSUER as string), ssoIssuer());
      assert.equal(defaultOf(vars.TEMPORAL_OIDC_AUDIENCE as string), DEFAULT_TOKEN_AUDIENCE);
      assert.equal(vars.TEMPORAL_OIDC_CLIENT_SECRET_FILE, ownFile(SERVICE_FILES.oidcSecret));
      clients[name] = defaultOf(vars.TEMPORAL_OIDC_CLIENT_ID as string);
      assert.equal(clients[name], oidcClient, `${name} signs in as the client whose secret the job gives it`);
    }
    assert.deepEqual(clients, {
      worker: CLUSTER_SERVICES.worker,
      cli: CLUSTER_SERVICES.cli,
      webhooks: 'docs-admin-webhooks',
    });
    // The setup's token job signs in as the cluster's setup service (an admin), for the setup alone.
    const tokenJob = env('temporal-setup-token');
    assert.equal(defaultOf(tokenJob.TEMPORAL_OIDC_CLIENT_ID as string), CLUSTER_SERVICES.setup);
    assert.equal(SERVICE_SECRETS['temporal-setup']?.oidcClient, CLUSTER_SERVICES.setup);
    assert.equal(tokenJob.TEMPORAL_OIDC_CLIENT_SECRET_FILE, ownFile(SERVICE_FILES.oidcSecret));
    assert.equal(tokenJob.SETUP_TOKEN_FILE, ownFile(SERVICE_FILES.setupToken));
  });

  test('the internal-frontend and the services behind it listen on a network only the server joins', () => {
    assert.deepEqual(compose.networks?.['temporal-internal'], { internal: true });
    const members = Object.entries(services).filter(([, svc]) => {
      const nets = svc.networks ?? {};
      return Array.isArray(nets) ? nets.includes('temporal-internal') : 'temporal-internal' in nets;
    });
    assert.deepEqual(
      members.map(([name]) => name),
      ['temporal'],
    );
    const networks = service('temporal').networks as Record<string, { aliases?: string[] } | null>;
    assert.ok('default' in networks, 'the frontend stays on the shared network for its clients');
    const alias = networks['temporal-internal']?.aliases?.[0] as string;
    const entrypoint = [service('temporal').entrypoint ?? []].flat().join(' ');
    // The server's address on that network is what it binds (BIND_ON_IP) and announces to its own services.
    assert.ok(entrypoint.includes(`getent hosts ${alias} | cut -d' ' -f1`), entrypoint);
    assert.match(entrypoint, /TEMPORAL_BROADCAST_ADDRESS="\$\$internal" BIND_ON_IP="\$\$internal"/);
    assert.equal(
      env('temporal').FRONTEND_BIND_ON_IP,
      '0.0.0.0',
      'the frontend for every client (with TLS and a token)',
    );
    assert.equal(env('temporal').BIND_ON_IP, undefined, 'nothing else on every interface');
    const template = readFileSync(SERVER_CONFIG_FILE, 'utf8');
    const rpc = (svc: string) =>
      new RegExp(
        `^  ${svc}:\\n    rpc:\\n(?:      .*\\n)*?      bindOnIP: \\{\\{ (\\$\\w+) \\| quote \\}\\}`,
        'm',
      ).exec(template)?.[1];
    assert.equal(rpc('frontend'), '$frontendBindOnIP');
    for (const svc of ['internal-frontend', 'history', 'matching', 'worker']) assert.equal(rpc(svc), '$bindOnIP', svc);
    // Only the frontend is published: the internal-frontend's port (admin for every caller) never.
    assert.deepEqual((service('temporal').ports ?? []).map(String), ['127.0.0.1:7233:7233']);
    assert.equal(env('temporal').INTERNAL_FRONTEND_GRPC_PORT, '7236');
  });

  test('docker-compose.sso.yml adds nothing any more: the same project, no services', () => {
    const override = parse(ssoText) as { name?: string; services?: Record<string, unknown> };
    assert.equal(override.name, (parse(composeText) as { name?: string }).name);
    assert.deepEqual(override.services, {});
  });
});

describe('docker-compose.yml: sign-on as `npm run cluster -- --sso` runs it', () => {
  test("the setup token job runs the project's image; the provider and the secrets job their own", () => {
    assert.equal(service('temporal-setup-token').image, service('worker').image);
    assert.deepEqual(service('temporal-setup-token').build, service('worker').build);
    for (const [name, target] of [
      ['sso-provider', 'sso-provider'],
      ['secrets-init', 'secrets'],
    ] as const) {
      assert.notEqual(service(name).image, service('worker').image, `${name} is not the worker's image`);
      assert.equal((service(name).build as { target?: string } | undefined)?.target, target);
    }
    assert.doesNotMatch(composeText, /CLIENT_SECRET:|scrypt\$|"kty"/, 'no secret, hash or key in the file');
  });

  test('the provider: the module of npm run sso-provider on the issuer, on loopback, its key in a volume', () => {
    const provider = service('sso-provider');
    assert.deepEqual(provider.entrypoint, ['node', compiled('sso-provider/main.ts')]);
    assert.equal(scriptModule('sso-provider'), 'sso-provider/main.ts');
    // The stand-in's own image (the Dockerfile's sso-provider target), not the worker's.
    assert.notEqual(provider.image, service('worker').image);
    assert.equal((provider.build as { target?: string } | undefined)?.target, 'sso-provider');
    const providerEnv = env('sso-provider');
    for (const name of ['SSO_ISSUER', 'SSO_DIRECTORY_FILE', 'SSO_SIGNING_KEY_FILE', 'SSO_AUDIENCE'])
      assert.ok(providerEnv[name], `the provider gets ${name}`);
    assert.equal(defaultOf(providerEnv.SSO_AUDIENCE as string), DEFAULT_TOKEN_AUDIENCE);
    assert.equal(defaultOf(providerEnv.SSO_ACCESS_TOKEN_TTL_SECONDS as string), '900');

    // One issuer for the browser (the published port on 127.0.0.1) and the containers (the network alias).
    const issuer = new URL(ssoIssuer());
    assert.equal(Number(issuer.port), CLUSTER_PORTS.sso, "the cluster's provider port");
    assert.match(issuer.hostname, /\.localhost$/, 'a name browsers resolve to 127.0.0.1 by themselves');
    const networks = provider.networks as { default?: { aliases?: string[] } } | undefined;
    assert.deepEqual(networks?.default?.aliases, [issuer.hostname]);
    assert.deepEqual(
      (provider.ports ?? []).map(String),
      [`127.0.0.1:${issuer.port}:${issuer.port}`],
      'published on loopback only',
    );
    assert.match(JSON.stringify(provider.healthcheck?.test), /SSO_ISSUER \+ '\/health'/);

    // The directory comes from the secrets job's sso folder; the signing key from a volume no other service mounts.
    assert.equal(path.posix.dirname(providerEnv.SSO_DIRECTORY_FILE as string), SSO_MOUNT);
    assert.deepEqual(secretMounts('sso-provider'), [{ folder: 'sso', container: SSO_MOUNT, readOnly: true }]);
    const keyDir = path.posix.dirname(providerEnv.SSO_SIGNING_KEY_FILE as string);
    const keyVolume = (provider.volumes ?? []).find((v) => v.endsWith(`:${keyDir}`))?.split(':')[0];
    assert.ok(keyVolume && compose.volumes && keyVolume in compose.volumes, 'a named volume');
    for (const [name, svc] of Object.entries(services))
      if (name !== 'sso-provider')
        assert.ok(!(svc.volumes ?? []).some((v) => v.startsWith(`${keyVolume}:`)), `${name} cannot read the key`);
    assert.match(clusterSso, /ensureDirectory\(SSO_FILES\.directory, \{ namespace: .*, uiRedirectUri: /);
  });

  test('the server: the five services, as the cluster runs them with sign-on', () => {
    const [program, rootFlag, , ...rest] = [service('temporal').command ?? []].flat();
    assert.deepEqual([program, rootFlag], ['temporal-server', '--root']);
    assert.deepEqual(rest, SSO_SERVER_ARGS, "after --root, the cluster's arguments with sign-on");
    const variables = templateVariables(SERVER_CONFIG_FILE);
    const unknown = Object.keys(env('temporal')).filter((name) => !variables.has(name));
    assert.deepEqual(unknown, [], 'only variables config.yaml reads');
  });

  test("the Web UI: ui.yaml's login variables, its secret from its own folder, tokens to the codec", () => {
    const ui = env('temporal-ui');
    const uiTemplate = templateVariables(path.join(ROOT, 'deploy/temporal/ui.yaml'));
    // The image's own template reads the scopes as a list; ui.yaml names them.
    const unknown = Object.keys(ui).filter((name) => !uiTemplate.has(name) && name !== 'TEMPORAL_AUTH_SCOPES');
    assert.deepEqual(unknown, [], 'only variables deploy/temporal/ui.yaml reads');
    for (const name of clusterSsoKeys('ssoUiEnv'))
      if (name !== 'TEMPORAL_AUTH_CLIENT_SECRET') assert.ok(ui[name], `compose sets ${name} as the cluster does`);
    assert.equal(ui.TEMPORAL_AUTH_ENABLED, 'true');
    assert.equal(ui.TEMPORAL_CODEC_PASS_ACCESS_TOKEN, 'true');
    assert.equal(defaultOf(ui.TEMPORAL_AUTH_PROVIDER_URL as string), ssoIssuer());
    assert.equal(defaultOf(ui.TEMPORAL_AUTH_CLIENT_ID as string), CLUSTER_UI_CLIENT_ID);
    assert.equal(SERVICE_SECRETS['temporal-ui']?.oidcClient, CLUSTER_UI_CLIENT_ID);
    assert.deepEqual(ui.TEMPORAL_AUTH_SCOPES?.split(','), ['openid', 'profile', 'email']);
    assert.equal(ui.TEMPORAL_AUTH_CLIENT_SECRET, undefined, 'the secret is in no compose file');
    const [shell, flag, script, file] = [service('temporal-ui').entrypoint ?? []].flat();
    assert.deepEqual([shell, flag], ['sh', '-c']);
    assert.match(
      script ?? '',
      /TEMPORAL_AUTH_CLIENT_SECRET="\$\$\(cat "\$\$0"\)" && export .* && exec \.\/start-ui-server\.sh$/,
    );
    assert.equal(file, ownFile(SERVICE_FILES.oidcSecret));
    const ui2 = ports('temporal-ui')[0];
    assert.equal(
      defaultOf(ui.TEMPORAL_AUTH_CALLBACK_URL as string),
      `http://127.0.0.1:${ui2?.host}/auth/sso/callback`,
      "the UI's published address",
    );
  });

  test("the codec server accepts the issuer's access tokens over HTTPS, as the cluster's does", () => {
    const codec = env('codec-server');
    assert.deepEqual(
      clusterSsoKeys('ssoCodecEnv').filter((name) => !codec[name]),
      [],
      'every variable the cluster sets',
    );
    assert.equal(defaultOf(codec.CODEC_SERVER_OIDC_ISSUER as string), ssoIssuer());
    assert.equal(defaultOf(codec.CODEC_SERVER_OIDC_AUDIENCE as string), DEFAULT_TOKEN_AUDIENCE);
    assert.equal(codec.CODEC_SERVER_TLS_CERT_FILE, ownFile(SERVICE_FILES.serverCert));
    assert.equal(codec.CODEC_SERVER_TLS_KEY_FILE, ownFile(SERVICE_FILES.serverKey));
    assert.equal(SERVICE_SECRETS['codec-server']?.certificate, 'https');
    assert.ok(codec.CODEC_SERVER_TOKEN_FILE, 'and still the tokens of its file');
  });

  test("the setup job calls with the setup service's token, which a one-shot job fetches for it", () => {
    const script = [service('temporal-setup-token').entrypoint ?? []].flat().join(' ');
    assert.match(script, /require\('\.\/dist\/src\/connection\/service-token\.js'\)/);
    assert.match(script, /fetchServiceToken\(tokens\.serviceTokenSettingsFromEnv\(process\.env\)\)/);
    assert.match(script, /writeFileSync\(process\.env\.SETUP_TOKEN_FILE, t\.token, \{ mode: 0o600 \}\)/);
    const [, , line, tokenFile] = [service('temporal-setup').entrypoint ?? []].flat();
    assert.equal(tokenFile, env('temporal-setup-token').SETUP_TOKEN_FILE);
    assert.match(line ?? '', /^TEMPORAL_API_KEY="\$\$\(cat "\$\$0"\)" && export TEMPORAL_API_KEY && exec sh /);
    assert.deepEqual(dependencies('temporal-setup')['temporal-setup-token'], {
      condition: 'service_completed_successfully',
    });
    // The cluster's setup does the same (scripts/cluster/control.ts).
    assert.match(
      readFileSync(path.join(ROOT, 'scripts/cluster/control.ts'), 'utf8'),
      /TEMPORAL_API_KEY: await serviceToken\(SERVICES\.setup\), TEMPORAL_TLS: String\(tls\)/,
    );
  });
});
