// `npm run cluster -- --monitoring`: Debian's Prometheus (/usr/bin/prometheus) on 127.0.0.1:9690 with
// the shipped alert rules (deploy/prometheus/alerts.yml), data in .data/cluster/prometheus. It scrapes
// the default worker port (127.0.0.1:9464, `npm run worker`) and every worker listed in
// .data/cluster/prometheus/targets/*.json: the worker processes that tests and benchmarks start
// (test/chaos/helpers.ts WorkerProcess) write one file there each (file_sd) and remove it on exit.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { ROOT } from '../tools';
import { CLUSTER_DATA_DIR, HOST } from './layout';
import { runningProcess, startDetached, stopRecorded, tail } from './processes';

export const PROMETHEUS_BIN = '/usr/bin/prometheus';
export const PROMETHEUS_PORT = 9690;
export const RULES_FILE = path.join(ROOT, 'deploy', 'prometheus', 'alerts.yml');
export const MONITORING_DIR = path.join(CLUSTER_DATA_DIR, 'prometheus');
/** file_sd target files of the workers that tests and benchmarks start (one JSON file per worker). */
export const WORKER_TARGETS_DIR = path.join(MONITORING_DIR, 'targets');
export const WORKER_JOB = 'docs-admin-worker';
const STATE_FILE = path.join(MONITORING_DIR, 'prometheus.json');
const LOG_FILE = path.join(MONITORING_DIR, 'prometheus.log');

export interface PrometheusConfigOptions {
  ruleFiles: string[];
  staticTargets?: string[];
  targetFiles?: string[];
  /** Scrape and rule evaluation interval (default 15s). */
  interval?: string;
}

/** prometheus.yml: the workers as one job (WORKER_JOB, which DocsNoWorkerScraped watches), the rules. */
export function prometheusConfig(options: PrometheusConfigOptions): string {
  const interval = options.interval ?? '15s';
  const job: Record<string, unknown> = { job_name: WORKER_JOB, metrics_path: '/metrics' };
  if (options.staticTargets?.length) job.static_configs = [{ targets: options.staticTargets }];
  if (options.targetFiles?.length) job.file_sd_configs = [{ files: options.targetFiles, refresh_interval: '5s' }];
  return stringify({
    global: { scrape_interval: interval, evaluation_interval: interval },
    rule_files: options.ruleFiles,
    scrape_configs: [job],
  });
}

/** The command line of a Prometheus on HOST:port with its config and data in `dir`. */
export function prometheusArgs(dir: string, port: number): string[] {
  return [
    `--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=${HOST}:${port}`,
    '--storage.tsdb.retention.time=7d',
  ];
}

/** Resolves once GET /-/ready answers 200 (or throws after timeoutMs, with the log's tail). */
export async function waitReady(port: number, log: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`http://${HOST}:${port}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`Prometheus did not become ready on ${HOST}:${port}:\n${tail(log)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Starts the cluster's Prometheus unless it runs; returns its URL. */
export async function ensureMonitoring(log: (line: string) => void): Promise<string> {
  const url = `http://${HOST}:${PROMETHEUS_PORT}`;
  if (!existsSync(PROMETHEUS_BIN))
    throw new Error(`${PROMETHEUS_BIN} not found: apt-get install -y prometheus (Debian's package)`);
  mkdirSync(WORKER_TARGETS_DIR, { recursive: true });
  if (runningProcess(STATE_FILE)) return url;
  writeFileSync(
    path.join(MONITORING_DIR, 'prometheus.yml'),
    prometheusConfig({
      ruleFiles: [RULES_FILE],
      staticTargets: [`${HOST}:9464`],
      targetFiles: [path.join(WORKER_TARGETS_DIR, '*.json')],
    }),
  );
  startDetached(PROMETHEUS_BIN, prometheusArgs(MONITORING_DIR, PROMETHEUS_PORT), {
    env: { PATH: process.env.PATH },
    log: LOG_FILE,
    stateFile: STATE_FILE,
  });
  await waitReady(PROMETHEUS_PORT, LOG_FILE);
  log(`  Prometheus     ${url}    (alerts: ${url}/alerts; rules ${path.relative(ROOT, RULES_FILE)})`);
  return url;
}

/** Whether the cluster's Prometheus runs (harnesses then give their workers a metrics port and register it). */
export function monitoringRunning(): boolean {
  return runningProcess(STATE_FILE) !== undefined;
}

/** Stops the cluster's Prometheus if it runs (its data stays). */
export async function stopMonitoring(): Promise<boolean> {
  return (await stopRecorded(STATE_FILE)) !== undefined;
}

/** A worker's file_sd entry (written by harnesses that start workers; removed when the worker ends). */
export function registerWorkerTarget(name: string, metricsPort: number, labels: Record<string, string> = {}) {
  const file = path.join(WORKER_TARGETS_DIR, `${name}.json`);
  if (!existsSync(WORKER_TARGETS_DIR)) return () => undefined;
  writeFileSync(file, JSON.stringify([{ targets: [`${HOST}:${metricsPort}`], labels }]));
  return () => rmSync(file, { force: true });
}
