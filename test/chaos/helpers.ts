// Shared machinery of the fault-injection suite and the throughput benchmark: a Temporal dev server
// this process owns (optionally on a persistent database, restartable on the same port), the worker as
// a child process (`node --import tsx src/worker.ts`, killable with SIGKILL, its RSS/CPU sampled and
// its logs captured), starting and settling many lifecycles, and the secrets scan.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { firstApplicationFailure } from '../../src/shared/failures';
import { findTemporalCli, ROOT } from '../../scripts/tools';
import { resendAgentJob, resolveAgentJob, startExport } from '../../src/client';
import type { EmulatedAgentJob } from '../../emulator';
import { NEEDS_OPERATOR, agentStatusQuery, agentWorkflowId, type AgentJobInput } from '../../src/shared/agent-job';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../../src/shared/search-attributes';
import { WorkflowType } from '../../src/shared/workflow-types';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../../scripts/dev-server';
import { freeLoopbackPort } from '../../src/observability/free-port';
import { waitFor } from '../../scripts/wait';
import { monitoringRunning, registerWorkerTarget } from '../../scripts/cluster/monitoring';
import { bundleCacheEnv, bundleCacheNodeArgs } from '../helpers/bundle-cache';

const run = promisify(execFile);

/** A free 127.0.0.1 port (re-exported for the chaos tests). */
export const freePort = freeLoopbackPort;

/** scripts/wait.ts's waitFor with the chaos suite's defaults (30 s, every 100 ms) and its argument order. */
export function until<T>(
  predicate: () => T | Promise<T>,
  what: string,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<NonNullable<T>> {
  return waitFor(predicate, { what, timeoutMs, intervalMs });
}

/** Keeps the last `max` characters of a stream. */
class Tail {
  text = '';
  constructor(private readonly max = 4 * 1024 * 1024) {}
  push(chunk: Buffer | string): void {
    this.text += chunk.toString();
    if (this.text.length > this.max) this.text = this.text.slice(-this.max);
  }
}

function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

// ---- Temporal dev server -------------------------------------------------------------------------------

export interface DevServerOptions {
  /** SQLite file: the server keeps its state across restart(). Default: in memory. */
  dbFile?: string;
  /** Default: a free port (kept across restarts). */
  port?: number;
  /** Extra `--dynamic-config-value name=value` settings. */
  dynamicConfig?: Record<string, string | number | boolean>;
}

/** `temporal server start-dev` owned by this process, on 127.0.0.1, headless, with the project's search attributes. */
export class DevServer {
  readonly cli: string;
  readonly port: number;
  readonly dbFile: string | undefined;
  readonly dynamicConfig: Record<string, string | number | boolean>;
  readonly output = new Tail(256 * 1024);
  #child: ChildProcess | undefined;

  private constructor(
    cli: string,
    port: number,
    dbFile: string | undefined,
    dynamicConfig: Record<string, string | number | boolean>,
  ) {
    this.cli = cli;
    this.port = port;
    this.dbFile = dbFile;
    this.dynamicConfig = dynamicConfig;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  static async start(options: DevServerOptions = {}): Promise<DevServer> {
    const cli = findTemporalCli();
    if (!cli) throw new Error('no Temporal CLI: run `npm run bootstrap` (or set TEMPORAL_CLI)');
    const server = new DevServer(cli, options.port ?? (await freePort()), options.dbFile, options.dynamicConfig ?? {});
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    if (this.#child) throw new Error('the dev server is already running');
    const args = [
      'server',
      'start-dev',
      '--headless',
      '--ip',
      '127.0.0.1',
      '--port',
      String(this.port),
      '--log-level',
      'error',
      // The project's dev-server settings, then this server's own (a later value wins).
      ...DEV_SERVER_DYNAMIC_CONFIG.flatMap((value) => ['--dynamic-config-value', value]),
      ...Object.entries(this.dynamicConfig).flatMap(([name, value]) => [
        '--dynamic-config-value',
        `${name}=${JSON.stringify(value)}`,
      ]),
      ...(this.dbFile ? ['--db-filename', this.dbFile] : []),
      ...Object.entries(SEARCH_ATTRIBUTE_REGISTRATION).flatMap(([name, type]) => [
        '--search-attribute',
        `${name}=${type}`,
      ]),
    ];
    const child = spawn(this.cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => this.output.push(c));
    child.stderr!.on('data', (c: Buffer) => this.output.push(c));
    this.#child = child;
    let exited = false;
    child.once('exit', () => {
      exited = true;
      if (this.#child === child) this.#child = undefined;
    });
    await until(
      async () => {
        if (exited) throw new Error(`the dev server exited during start: ${this.output.text.slice(-2000)}`);
        return this.healthy();
      },
      `the dev server on ${this.address}`,
      60_000,
      250,
    );
  }

  async healthy(): Promise<boolean> {
    try {
      const { stdout } = await run(this.cli, ['operator', 'cluster', 'health', '--address', this.address], {
        timeout: 10_000,
      });
      return stdout.includes('SERVING');
    } catch {
      return false;
    }
  }

  /** Stops the server: SIGTERM (graceful) or SIGKILL (a crash). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.#child;
    if (!child) return;
    const exited = waitForExit(child);
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    this.#child = undefined;
  }

  /** Stops and starts again on the same port (and database, when persistent). */
  async restart(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await this.stop(signal);
    await this.start();
  }

  /** `temporal <args> --address <this>`: stdout and stderr together (the secrets scan reads them). */
  async cliOutput(args: string[]): Promise<string> {
    const { stdout, stderr } = await run(this.cli, [...args, '--address', this.address], {
      timeout: 30_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout + stderr;
  }
}

// ---- the worker as a child process ---------------------------------------------------------------------

export interface UsageSample {
  atMs: number;
  rssBytes: number;
  /** user + system CPU seconds so far. */
  cpuSeconds: number;
}

export interface ProcessUsage {
  /** VmHWM: the kernel's own peak resident set size. */
  peakRssBytes: number;
  cpuSeconds: number;
  samples: UsageSample[];
}

const CLK_TCK = 100;

/** One reading of /proc/<pid> (Linux); undefined when the process is gone or /proc is missing. */
export function readUsage(pid: number): (UsageSample & { hwmBytes: number }) | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string): number =>
      Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at field 3; utime and stime are 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { atMs: Date.now(), rssBytes: kb('VmRSS'), hwmBytes: kb('VmHWM'), cpuSeconds: ticks / CLK_TCK };
  } catch {
    return undefined;
  }
}

/** Samples a process's RSS and CPU every intervalMs until stop(). */
export class UsageSampler {
  readonly samples: UsageSample[] = [];
  #peak = 0;
  #cpuAtStart: number;
  #timer: NodeJS.Timeout;
  constructor(
    readonly pid: number,
    intervalMs = 250,
  ) {
    this.#cpuAtStart = readUsage(pid)?.cpuSeconds ?? 0;
    this.#timer = setInterval(() => this.sample(), intervalMs);
    this.#timer.unref();
  }

  sample(): void {
    const u = readUsage(this.pid);
    if (!u) return;
    this.#peak = Math.max(this.#peak, u.hwmBytes, u.rssBytes);
    this.samples.push({ atMs: u.atMs, rssBytes: u.rssBytes, cpuSeconds: u.cpuSeconds - this.#cpuAtStart });
  }

  stop(): ProcessUsage {
    this.sample();
    clearInterval(this.#timer);
    const last = this.samples[this.samples.length - 1];
    return { peakRssBytes: this.#peak, cpuSeconds: last?.cpuSeconds ?? 0, samples: this.samples };
  }
}

export interface WorkerProcessOptions {
  /** Environment of the worker (ADMIN_API_URL, ADMIN_API_KEY, TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, ...). */
  env: Record<string, string>;
  /** Default src/worker.ts; a module that starts a worker from the environment when run as main. */
  script?: string;
  /** Extra arguments after the script. */
  args?: string[];
  /** Extra Node options before the script (e.g. --cpu-prof, which NODE_OPTIONS does not accept). */
  nodeArgs?: string[];
  /** Log line that says the worker polls (default: the docs-admin worker's start line). */
  readyLine?: string;
  readyTimeoutMs?: number;
}

/** `node --import tsx src/worker.ts` with its own environment; stdout and stderr captured for the secrets scan. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly output = new Tail();
  readonly exited: Promise<number | null>;

  private constructor(child: ChildProcess) {
    this.child = child;
    child.stdout!.on('data', (c: Buffer) => this.output.push(c));
    child.stderr!.on('data', (c: Buffer) => this.output.push(c));
    this.exited = waitForExit(child);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  static async start(options: WorkerProcessOptions): Promise<WorkerProcess> {
    const script = options.script ?? path.join(ROOT, 'src', 'worker.ts');
    // With `npm run cluster -- --monitoring` on, a metrics port of its own that Prometheus scrapes (file_sd, below).
    const metricsPort = options.env.METRICS_PORT ?? (monitoringRunning() ? String(await freeLoopbackPort()) : '0');
    const child = spawn(
      process.execPath,
      // In a test run, the run's workflow bundle cache (test/helpers/bundle-cache.ts): the start's bundle, made once.
      [...(options.nodeArgs ?? []), '--import', 'tsx', ...bundleCacheNodeArgs(), script, ...(options.args ?? [])],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          ...bundleCacheEnv(),
          ...options.env,
          METRICS_PORT: metricsPort,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const worker = new WorkerProcess(child);
    if (Number(metricsPort) > 0) {
      const unregister = registerWorkerTarget(`worker-${child.pid}`, Number(metricsPort), {
        task_queue: options.env.TEMPORAL_TASK_QUEUE ?? '',
      });
      void worker.exited.finally(unregister);
    }
    const readyLine = options.readyLine ?? 'docs-admin worker started';
    try {
      await until(
        () => {
          if (!worker.running)
            throw new Error(`the worker exited before it was ready:\n${worker.output.text.slice(-3000)}`);
          return worker.output.text.includes(readyLine);
        },
        `the worker to log "${readyLine}"`,
        options.readyTimeoutMs ?? 180_000,
        100,
      );
    } catch (err) {
      await worker.kill('SIGKILL');
      throw new Error(`${(err as Error).message}; its output ended with:\n${worker.output.text.slice(-2000)}`, {
        cause: err,
      });
    }
    return worker;
  }

  /** Sends the signal and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.running) return;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await this.exited;
    clearTimeout(timer);
  }
}

// ---- lifecycles ---------------------------------------------------------------------------------------------

export interface AgentLifecycle {
  workflowId: string;
  projectId: string;
  prompt: string;
}

export interface Lifecycles {
  exportIds: string[];
  exportDomains: string[];
  agents: AgentLifecycle[];
}

export interface LifecyclePlan {
  exports: number;
  agents: number;
  /** Agent workflows are spread over this many projects (one rate limiter each). Default 10. */
  projects?: number;
  /** Makes ids, domains and prompts unique to this run. */
  tag: string;
  /** Concurrent start calls. Default 50. */
  concurrency?: number;
  /**
   * Start both kinds by workflow type name with plain JSON, as another service or a Schedule does: no
   * search attributes, no summary, no fairness key. Default: exports through src/client.ts startExport.
   */
  plain?: boolean;
}

/** Runs fn over items with at most `limit` in flight. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(lanes);
  return results;
}

/**
 * Starts `plan.exports` staticExport workflows (through src/client.ts startExport) and `plan.agents`
 * agentJob workflows (plain start: the benchmark wants them all in flight at once, not each waiting
 * for its job id), each with a unique domain or prompt.
 */
export async function startLifecycles(client: Client, taskQueue: string, plan: LifecyclePlan): Promise<Lifecycles> {
  const projects = plan.projects ?? 10;
  type Item = { kind: 'export'; i: number } | { kind: 'agent'; i: number };
  const items: Item[] = [];
  // Interleaved, so both kinds are in flight from the start.
  for (let i = 0; i < Math.max(plan.exports, plan.agents); i++) {
    if (i < plan.exports) items.push({ kind: 'export', i });
    if (i < plan.agents) items.push({ kind: 'agent', i });
  }
  const out: Lifecycles = { exportIds: [], exportDomains: [], agents: [] };
  await mapLimit(items, plan.concurrency ?? 50, async (item) => {
    if (item.kind === 'export') {
      const domain = `${plan.tag}-${item.i}.docs.example.com`;
      const handle = plan.plain
        ? await client.workflow.start(WorkflowType.staticExport, {
            workflowId: `${plan.tag}-export-${item.i}`,
            taskQueue,
            args: [{ domain }],
          })
        : await startExport(client, { domain }, { taskQueue, requestId: `r${item.i}` });
      out.exportIds.push(handle.workflowId);
      out.exportDomains.push(domain);
    } else {
      const projectId = `${plan.tag}-p${item.i % projects}`;
      const requestId = `r${item.i}`;
      const prompt = `Fix the typos on page ${item.i} (${plan.tag})`;
      const input: AgentJobInput = plan.plain ? { projectId, prompt } : { projectId, prompt, requestId };
      const workflowId = plan.plain ? `${plan.tag}-agent-${item.i}` : agentWorkflowId(projectId, requestId);
      await client.workflow.start(WorkflowType.agentJob, { workflowId, taskQueue, args: [input] });
      out.agents.push({ workflowId, projectId, prompt: input.prompt });
    }
  });
  return out;
}

export interface Settled {
  workflowId: string;
  ok: boolean;
  result?: unknown;
  /** ApplicationFailure type found in the failure chain (e.g. OutcomeUnknown), when failed. */
  failureType?: string;
  message?: string;
  /** When the result arrived (ms since epoch). */
  atMs: number;
  /** How an operator (the settle loop below) settled each parking of this agent job, if it parked. */
  operator?: ('resolved' | 'resent')[];
}

/** What settle needs to play the operator for parked agent jobs: the lifecycles' agents and the emulator's jobs. */
export interface OperatorView {
  agents: Lifecycles['agents'];
  jobs: () => readonly EmulatedAgentJob[];
}

/**
 * Plays the on-call operator until `done()`: every parked agent job (DocsJobStatus needs-operator) is
 * resolved with the job the emulator holds for its prompt, or resent when there is none. A parking is
 * settled only once its call window ended a few seconds ago, so a slow request still on its way to the
 * emulator has landed (an operator looks at the dashboard after the fact, too).
 */
async function playOperator(
  client: Client,
  view: OperatorView,
  done: () => boolean,
): Promise<Map<string, ('resolved' | 'resent')[]>> {
  const byId = new Map(view.agents.map((a) => [a.workflowId, a]));
  const settledBy = new Map<string, ('resolved' | 'resent')[]>();
  while (!done()) {
    const parked: string[] = [];
    for await (const wf of client.workflow.list({
      query: `DocsJobStatus='${NEEDS_OPERATOR}' AND ExecutionStatus='Running'`,
    }))
      if (byId.has(wf.workflowId)) parked.push(wf.workflowId);
    for (const workflowId of parked) {
      const agent = byId.get(workflowId)!;
      const status = await client.workflow
        .getHandle(workflowId)
        .query(agentStatusQuery)
        .catch(() => undefined);
      if (status?.phase !== NEEDS_OPERATOR || !status.parked || Date.now() - Date.parse(status.parked.to) < 5_000)
        continue;
      const job = view.jobs().find((j) => j.prompt === agent.prompt && j.projectId === agent.projectId);
      try {
        if (job) await resolveAgentJob(client, workflowId, job.id);
        else await resendAgentJob(client, workflowId);
        settledBy.set(workflowId, [...(settledBy.get(workflowId) ?? []), job ? 'resolved' : 'resent']);
      } catch {
        // Settled meanwhile (or no longer parked): the next round looks again.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return settledBy;
}

/** The first ApplicationFailure type in an error's cause chain. */
export function failureTypeOf(err: unknown): string | undefined {
  return firstApplicationFailure(err)?.type ?? undefined;
}

/**
 * Awaits every workflow's result (following continue-as-new); never throws for a failed workflow. With
 * `operator`, parked agent jobs are settled meanwhile as an on-call engineer would (playOperator).
 */
export async function settle(
  client: Client,
  workflowIds: readonly string[],
  { concurrency = 200, operator }: { concurrency?: number; operator?: OperatorView } = {},
): Promise<Settled[]> {
  let done = false;
  const operating = operator ? playOperator(client, operator, () => done) : undefined;
  try {
    const settled = await awaitAll(client, workflowIds, concurrency);
    done = true;
    const settledBy = (await operating) ?? new Map();
    return settled.map((s) => (settledBy.has(s.workflowId) ? { ...s, operator: settledBy.get(s.workflowId) } : s));
  } finally {
    done = true;
    await operating?.catch(() => undefined);
  }
}

async function awaitAll(client: Client, workflowIds: readonly string[], concurrency: number): Promise<Settled[]> {
  return mapLimit(workflowIds, concurrency, async (workflowId) => {
    const handle: WorkflowHandle = client.workflow.getHandle(workflowId);
    try {
      const result: unknown = await handle.result();
      return { workflowId, ok: true, result, atMs: Date.now() };
    } catch (err) {
      return {
        workflowId,
        ok: false,
        failureType: failureTypeOf(err) ?? 'unknown',
        message: (err as Error).message,
        atMs: Date.now(),
      };
    }
  });
}

/** Agent jobs the emulator holds per prompt. */
export function jobsPerPrompt(jobs: readonly EmulatedAgentJob[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const job of jobs) counts.set(job.prompt, (counts.get(job.prompt) ?? 0) + 1);
  return counts;
}

/** A new Client on address (closed by the returned close()). */
export async function connect(address: string): Promise<{ client: Client; close: () => Promise<void> }> {
  const connection = await Connection.connect({ address });
  return { client: new Client({ connection }), close: () => connection.close() };
}

/** A key that looks like an admin key and is unique to this run: easy to search for. */
export function secretKey(label: string): string {
  return `mint_${label}_${randomUUID().replace(/-/g, '')}`;
}

// ---- secrets scan ---------------------------------------------------------------------------------------------

/** History as text: payload bytes decoded as UTF-8 (JSON.stringify alone would show them as numbers). */
export function historyText(history: unknown): string {
  return JSON.stringify(history, (_key, value: unknown) => {
    if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
    if (typeof value === 'bigint') return value.toString();
    return value;
  });
}

/** Every workflow's full history, as text. */
export async function historiesText(client: Client, workflowIds: readonly string[]): Promise<string[]> {
  return mapLimit(workflowIds, 20, async (id) => historyText(await client.workflow.getHandle(id).fetchHistory()));
}

/** Where the secret (or its base64 form) appears: a list of labels, empty when nowhere. */
export function findSecret(secret: string, sources: Record<string, string | string[]>): string[] {
  const needles = [secret, Buffer.from(secret).toString('base64'), secret.slice('mint_'.length)];
  const found: string[] = [];
  for (const [label, texts] of Object.entries(sources)) {
    const list = Array.isArray(texts) ? texts : [texts];
    list.forEach((text, i) => {
      if (needles.some((n) => text.includes(n))) found.push(list.length > 1 ? `${label}[${i}]` : label);
    });
  }
  return found;
}

// ---- assertions shared by the chaos tests ------------------------------------------------------------------------

export interface OutcomeReport {
  exportsCompleted: number;
  agentsCompleted: number;
  /** Agent workflows that failed with OutcomeUnknown (allowed only under create faults). */
  agentsOutcomeUnknown: number;
  /** Agent workflows that parked (outcome unknown) and an operator settled: by resolve, by resend. */
  agentsParked: { resolved: number; resent: number };
  /** Agent workflows neither completed nor ended OutcomeUnknown (must be 0). */
  agentsUnaccounted: number;
  /** Prompts with more than one agent job at the emulator (must be 0). */
  duplicates: number;
  /** Every broken expectation, one line each (must be empty). */
  problems: string[];
}

/**
 * Checks every lifecycle's result against the emulator: exports completed with a bundle for their own
 * domain; agent workflows completed with the one job the emulator holds for their prompt, or (when
 * allowOutcomeUnknown) failed with OutcomeUnknown and at most one job for their prompt.
 */
export function checkOutcomes(
  lifecycles: Lifecycles,
  settled: readonly Settled[],
  emulatorJobs: readonly EmulatedAgentJob[],
  { allowOutcomeUnknown = false } = {},
): OutcomeReport {
  const byId = new Map(settled.map((s) => [s.workflowId, s]));
  const perPrompt = jobsPerPrompt(emulatorJobs);
  const jobByPrompt = new Map(emulatorJobs.map((j) => [j.prompt, j]));
  const report: OutcomeReport = {
    exportsCompleted: 0,
    agentsCompleted: 0,
    agentsOutcomeUnknown: 0,
    agentsParked: { resolved: 0, resent: 0 },
    agentsUnaccounted: 0,
    duplicates: 0,
    problems: [],
  };
  lifecycles.exportIds.forEach((id, i) => {
    const s = byId.get(id);
    const domain = lifecycles.exportDomains[i];
    const result = s?.result as { domain?: string; bundleUrl?: string; jobId?: string } | undefined;
    if (!s?.ok) report.problems.push(`export ${id} did not complete: ${s?.failureType} ${s?.message ?? 'not settled'}`);
    else if (result?.domain !== domain || !result?.bundleUrl || !result?.jobId)
      report.problems.push(`export ${id}: wrong result ${JSON.stringify(result)}`);
    else report.exportsCompleted++;
  });
  for (const agent of lifecycles.agents) {
    const s = byId.get(agent.workflowId);
    for (const way of s?.operator ?? []) report.agentsParked[way]++;
    const count = perPrompt.get(agent.prompt) ?? 0;
    if (count > 1) {
      report.duplicates++;
      report.problems.push(`agent ${agent.workflowId}: ${count} jobs at the emulator for one prompt (a duplicate)`);
      continue;
    }
    if (s?.ok) {
      const result = s.result as { jobId?: string; status?: string; prLink?: string | null };
      const job = jobByPrompt.get(agent.prompt);
      if (count !== 1 || result.jobId !== job?.id)
        report.problems.push(
          `agent ${agent.workflowId}: result job ${result.jobId} is not the emulator's job ${job?.id} (jobs: ${count})`,
        );
      else if (result.status !== 'completed' || !result.prLink)
        report.problems.push(`agent ${agent.workflowId}: wrong result ${JSON.stringify(result)}`);
      else report.agentsCompleted++;
    } else if (allowOutcomeUnknown && s?.failureType === 'OutcomeUnknown') {
      report.agentsOutcomeUnknown++;
    } else {
      report.agentsUnaccounted++;
      report.problems.push(`agent ${agent.workflowId} failed: ${s?.failureType} ${s?.message ?? 'not settled'}`);
    }
  }
  return report;
}

/** Ids of every workflow on a task queue (agent and export workflows, limiters, keepers), from visibility. */
export async function workflowIdsOn(client: Client, taskQueue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) ids.push(wf.workflowId);
  return [...new Set(ids)];
}

export interface SecretScan {
  /** Where the key was found (empty: nowhere). */
  found: string[];
  historiesScanned: number;
  logBytes: number;
  cliBytes: number;
}

/**
 * Looks for the API key in every history on the task queues (fetched through the client, payloads
 * decoded), in `temporal workflow show/list --output json` for some of them, in the status command of
 * the project's CLI, and in the given logs.
 */
export async function scanForSecret(options: {
  key: string;
  client: Client;
  /** The server's address and its CLI (a DevServer or a chaos target). */
  server: { address: string; cliOutput(args: string[]): Promise<string> };
  taskQueues: string[];
  logs: Record<string, string>;
  /** How many histories to also export with the Temporal CLI. Default 5. */
  cliSample?: number;
}): Promise<SecretScan> {
  const ids = (await Promise.all(options.taskQueues.map((q) => workflowIdsOn(options.client, q)))).flat();
  const histories = await historiesText(options.client, ids);
  const cli: string[] = [];
  for (const id of ids.slice(0, options.cliSample ?? 5)) {
    cli.push(await options.server.cliOutput(['workflow', 'show', '--workflow-id', id, '--output', 'json']));
    cli.push(await options.server.cliOutput(['workflow', 'describe', '--workflow-id', id, '--output', 'json']));
  }
  cli.push(await options.server.cliOutput(['workflow', 'list', '--output', 'json', '--limit', '200']));
  // The project's CLI is a Node process of its own (seconds to start): the three side by side.
  cli.push(
    ...(await Promise.all(ids.slice(0, 3).map((id) => projectCli(['status', id, '--json'], options.server.address)))),
  );
  const found = findSecret(options.key, { history: histories, cli, ...options.logs });
  return {
    found,
    historiesScanned: histories.length,
    logBytes: Object.values(options.logs).reduce((n, s) => n + s.length, 0),
    cliBytes: cli.reduce((n, s) => n + s.length, 0),
  };
}

/** `npm run cli -- <args>` (src/starter.ts) against address: stdout and stderr together, whatever the exit code. */
export async function projectCli(args: string[], address: string): Promise<string> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'src', 'starter.ts'), ...args],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TEMPORAL_ADDRESS: address },
        timeout: 60_000,
      },
    );
    return stdout + stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return `${e.stdout ?? ''}${e.stderr ?? ''}${e.message}`;
  }
}
