// Tracing switch: OpenTelemetry configured only by the standard OTEL_* variables. When none is set,
// tracing is off and the OpenTelemetry SDK is never loaded (./tracing-sdk.ts is imported on demand):
// every hook below is then one `undefined` check.
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { type ApiCallTracer, TRACING_PROTOCOLS, type Tracing, type TracingProtocol } from './tracer';

export type { Tracing } from './tracer';

/** The variables that turn tracing on (any one of them set and not empty). */
export const TRACING_VARIABLES = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_SERVICE_NAME',
  'OTEL_TRACES_SAMPLER',
  'OTEL_RESOURCE_ATTRIBUTES',
] as const;

/** The OTLP/HTTP endpoint default of the OpenTelemetry specification. */
const DEFAULT_OTLP_BASE = 'http://localhost:4318';

export class TracingConfigError extends Error {
  override name = 'TracingConfigError';
}

/** True when the environment asks for traces (and OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none do not forbid them). */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return TRACING_VARIABLES.some((name) => (env[name] ?? '').trim() !== '');
}

/** The OTLP protocol (default http/protobuf, as in the specification); grpc is not shipped. */
export function tracingProtocol(env: NodeJS.ProcessEnv): TracingProtocol {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = (env[name] ?? '').trim() || 'http/protobuf';
  if ((TRACING_PROTOCOLS as readonly string[]).includes(value)) return value as TracingProtocol;
  throw new TracingConfigError(`${name}=${value} is not supported: use ${TRACING_PROTOCOLS.join(' or ')}`);
}

/**
 * Where spans are sent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT
 * with /v1/traces appended (the specification's rule), else http://localhost:4318/v1/traces.
 */
export function tracesEndpoint(env: NodeJS.ProcessEnv): string {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || DEFAULT_OTLP_BASE;
  const url = specific || `${base.replace(/\/+$/, '')}/v1/traces`;
  const name = specific ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TracingConfigError(`${name} is not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new TracingConfigError(`${name} must be an http:// or https:// URL: ${url}`);
  return url;
}

let current: Tracing | undefined;

/** The tracer this process started, if any. */
export function activeTracing(): Tracing | undefined {
  return current;
}

/**
 * Starts tracing when the environment asks for it (once per process: later calls return the first).
 * `serviceName` is the default OTEL_SERVICE_NAME. Throws TracingConfigError on a bad setting.
 */
export async function startTracing(env: NodeJS.ProcessEnv, serviceName: string): Promise<Tracing | undefined> {
  if (current || !tracingWanted(env)) return current;
  const settings = { protocol: tracingProtocol(env), endpoint: tracesEndpoint(env), serviceName };
  const { createTracing } = await import('./tracing-sdk');
  current ??= createTracing(settings);
  return current;
}

/**
 * Flushes and stops this process's tracer (the worker's shutdown, the CLI's exit). Resolves false when the
 * last spans could not be exported (no collector answering): never a reason for an exit to fail.
 */
export async function stopTracing(): Promise<boolean> {
  const tracing = current;
  current = undefined;
  return (tracing?.shutdown() ?? Promise.resolve()).then(
    () => true,
    () => false,
  );
}

/** Runs fn in a span when tracing is on; otherwise just runs it. */
export function inSpan<T>(
  name: string,
  attributes: Record<string, string | number>,
  fn: (set: (attributes: Record<string, string | number | boolean>) => void) => Promise<T>,
): Promise<T> {
  return current ? current.inSpan(name, attributes, fn) : fn(() => undefined);
}

/** The Temporal Client's interceptors: Temporal's tracing one when tracing is on. */
export function clientInterceptors(): { workflow: WorkflowClientInterceptor[] } {
  return { workflow: current ? [current.clientInterceptor()] : [] };
}

/**
 * Runs fn as a child of the caller's W3C traceparent, when one is given and tracing is on (without a
 * tracer in this process nothing would carry it further).
 */
export function withTraceparent<T>(traceparent: string | undefined, fn: () => Promise<T>): Promise<T> {
  return current && traceparent !== undefined ? current.withTraceparent(traceparent, fn) : fn();
}

/** The admin API client's tracer when tracing is on. */
export function apiCallTracer(): ApiCallTracer | undefined {
  return current?.apiCalls;
}
