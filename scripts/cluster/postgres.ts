// The cluster's PostgreSQL: Debian's server binaries, a database cluster of its own in
// .data/cluster/postgres, listening on 127.0.0.1 only (no Unix socket), password authentication.
// initdb refuses to run as root, so as root every server program runs as the `postgres` user (and
// when that user cannot enter this checkout, the database lives in its home instead).
import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { ROOT } from '../tools';
import { CLUSTER_DATA_DIR, CLUSTER_FILES, CLUSTER_PORTS, HOST, POSTGRES_USER } from './layout';
import { logOffset, tail } from './processes';

const OS_USER = 'postgres';
const isRoot = process.getuid?.() === 0;

/** Debian's newest /usr/lib/postgresql/<version>/bin, else wherever pg_ctl is on PATH. */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((v) => existsSync(path.join(base, v, 'bin', 'pg_ctl')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return path.join(base, versions[0], 'bin');
  }
  const found = spawnSync('sh', ['-c', 'command -v pg_ctl'], { encoding: 'utf8' }).stdout.trim();
  return found ? path.dirname(found) : undefined;
}

function bin(name: string): string {
  const dir = postgresBinDir();
  if (!dir) throw new Error('PostgreSQL is not installed: apt-get install -y postgresql (Debian 12 ships 15)');
  return path.join(dir, name);
}

/** Runs a PostgreSQL program, as the postgres user when this process is root. */
function runPg(program: string, args: string[], timeoutMs = 120_000) {
  const [command, argv] = isRoot ? ['runuser', ['-u', OS_USER, '--', bin(program), ...args]] : [bin(program), args];
  const result = spawnSync(command, argv as string[], { encoding: 'utf8', timeout: timeoutMs, cwd: '/' });
  return {
    ok: result.status === 0,
    output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}`.trim(),
  };
}

/** Whether the postgres user can enter a folder (it cannot reach a checkout under /root, mode 0700). */
function postgresCanEnter(dir: string): boolean {
  return !isRoot || spawnSync('runuser', ['-u', OS_USER, '--', 'test', '-x', dir]).status === 0;
}

/**
 * The database folder and its log: .data/cluster/postgres and postgres.log, or, when the postgres
 * user cannot enter this checkout, a folder of this checkout's own in that user's home (Debian's
 * /var/lib/postgresql), since PostgreSQL runs as that user.
 */
export function postgresPaths(): { data: string; log: string; password: string } {
  mkdirSync(CLUSTER_DATA_DIR, { recursive: true });
  if (postgresCanEnter(CLUSTER_DATA_DIR)) {
    return {
      data: CLUSTER_FILES.postgresData,
      log: CLUSTER_FILES.postgresLog,
      password: CLUSTER_FILES.postgresPassword,
    };
  }
  // Named by the checkout (as before DOCS_ADMIN_CLUSTER_DIR), or by another data folder of it.
  const owner = process.env.DOCS_ADMIN_CLUSTER_DIR ? CLUSTER_DATA_DIR : ROOT;
  const home = path.join(
    '/var/lib/postgresql',
    `docs-admin-cluster-${createHash('sha256').update(owner).digest('hex').slice(0, 12)}`,
  );
  mkdirSync(home, { recursive: true, mode: 0o700 });
  giveToPostgres(home);
  return { data: path.join(home, 'data'), log: path.join(home, 'postgres.log'), password: path.join(home, 'password') };
}

/** Hands a path to the postgres user (when root), who owns the data and writes the log. */
function giveToPostgres(file: string): void {
  if (!isRoot) return;
  const ids = spawnSync('id', ['-u', OS_USER], { encoding: 'utf8' });
  const gids = spawnSync('id', ['-g', OS_USER], { encoding: 'utf8' });
  if (ids.status !== 0)
    throw new Error(`there is no "${OS_USER}" user: install PostgreSQL with apt-get install -y postgresql`);
  chownSync(file, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
}

export function isPostgresReady(): boolean {
  if (!postgresBinDir()) return false;
  const result = spawnSync(bin('pg_isready'), ['-q', '-h', HOST, '-p', String(CLUSTER_PORTS.postgres)], {
    timeout: 10_000,
  });
  return result.status === 0;
}

export function isInitialized(): boolean {
  const { data, password } = postgresPaths();
  return existsSync(path.join(data, 'PG_VERSION')) && existsSync(password);
}

export function postgresPassword(): string {
  return readFileSync(postgresPaths().password, 'utf8').trim();
}

/**
 * Runs one SQL statement with psql against the cluster's database `database`, as the cluster connects
 * (TCP, its password wherever postgresPaths keeps it); rows of `|`-separated fields.
 */
export function psql(database: string, sql: string): string[][] {
  const result = spawnSync(
    bin('psql'),
    ['-h', HOST, '-p', String(CLUSTER_PORTS.postgres), '-U', POSTGRES_USER, '-d', database, '-At', '-c', sql],
    { encoding: 'utf8', env: { PATH: process.env.PATH, PGPASSWORD: postgresPassword() } },
  );
  if (result.status !== 0) throw new Error(`psql: ${(result.stderr || String(result.error)).trim()}`);
  return result.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('|'));
}

/**
 * Creates the database cluster: superuser `temporal` with a random password (kept in
 * .data/cluster/postgres-password), scram-sha-256 over TCP, no Unix socket. Built in a temporary
 * directory and renamed into place, so an interrupted run leaves nothing half made.
 */
function initialize({ data, password: passwordFile }: ReturnType<typeof postgresPaths>): void {
  const building = `${data}.init`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true, mode: 0o700 });
  giveToPostgres(building);
  if (isRoot && spawnSync('runuser', ['-u', OS_USER, '--', 'test', '-w', building]).status !== 0) {
    throw new Error(
      `the ${OS_USER} user cannot write ${building}: every folder above it must be enterable by others (chmod o+x)`,
    );
  }

  const password = randomBytes(24).toString('hex');
  const pwfile = path.join(path.dirname(data), `.pwfile-${process.pid}`);
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  giveToPostgres(pwfile);
  try {
    const init = runPg('initdb', [
      '-D',
      building,
      '-U',
      POSTGRES_USER,
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--no-locale',
    ]);
    if (!init.ok) throw new Error(`initdb failed:\n${init.output}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
  appendFileSync(
    path.join(building, 'postgresql.conf'),
    [
      '',
      '# npm run cluster: loopback only, its own port, no Unix socket (everything connects over TCP).',
      `listen_addresses = '${HOST}'`,
      `port = ${CLUSTER_PORTS.postgres}`,
      "unix_socket_directories = ''",
      // Each of the server's four services keeps its own pools (default store 20, visibility 10).
      'max_connections = 200',
      '',
    ].join('\n'),
  );
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  renameSync(building, data);
}

/** Starts PostgreSQL (creating its database cluster the first time) and waits until it accepts connections. */
export function startPostgres(log: (line: string) => void): void {
  const paths = postgresPaths();
  const { data, log: logFile } = paths;
  if (!isInitialized()) {
    log(`PostgreSQL: creating the database cluster in ${data}`);
    rmSync(data, { recursive: true, force: true });
    initialize(paths);
  }
  if (!existsSync(logFile)) closeSync(openSync(logFile, 'a'));
  giveToPostgres(logFile);
  log(`PostgreSQL: starting on ${HOST}:${CLUSTER_PORTS.postgres}`);
  const offset = logOffset(logFile);
  const started = runPg('pg_ctl', ['start', '-D', data, '-l', logFile, '-w', '-t', '60']);
  if (!started.ok) {
    throw new Error(`PostgreSQL did not start:\n${started.output}\n--- ${logFile}:\n${tail(logFile, { offset })}`);
  }
}

/** Stops this cluster's PostgreSQL (fast shutdown) and waits for it. Returns whether it was running. */
export function stopPostgres(): boolean {
  const { data } = postgresPaths();
  if (!postgresBinDir() || !existsSync(path.join(data, 'postmaster.pid'))) return false;
  if (!runPg('pg_ctl', ['status', '-D', data]).ok) return false;
  const stopped = runPg('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w', '-t', '60']);
  if (!stopped.ok) throw new Error(`pg_ctl stop failed:\n${stopped.output}`);
  return true;
}
