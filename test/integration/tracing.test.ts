// test-lane: parallel
// Traces end to end: an in-process OTLP/HTTP receiver on loopback, tracing on in this process (the
// client and the product's worker), one agent job (with a caller's traceparent) and one export. Each job
// is one trace, parent links from the caller's start down to the admin API's HTTP client spans, and no
// prompt, bundle link or API key anywhere in what was exported.
import assert from 'node:assert/strict';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
// The OTLP protobuf schema compiled by OpenTelemetry's own serializer package (no public decoder).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const otlpProto = require('@opentelemetry/otlp-transformer/build/src/generated/root') as OtlpProtoRoot;
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { awaitAgentJob, runExport, startAgentJob } from '../../src/client';
import { LIMITER_SPAN } from '../../src/activities/limiter-client';
import { startEmulator } from '../../emulator';
import { AdminApiClient } from '../../src/api/client';
import { type Tracing, clientInterceptors, inSpan, startTracing, stopTracing } from '../../src/observability/tracing';
import { type DocsAdminStack, createDevEnv, startDocsAdminStack, uniqueTaskQueue, waitFor } from '../helpers/temporal';

const KEY = 'mint_tracing_test_key_0123456789';
const PROMPT = 'private prompt: rewrite the quickstart 7f3c9e';
const CALLER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';

interface ProtoMessage {
  decode(raw: Uint8Array): unknown;
  toObject(message: unknown, options: Record<string, unknown>): unknown;
}
interface OtlpProtoRoot {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: ProtoMessage } } } } };
}

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

interface ExportedResource {
  attributes: ExportedSpan['attributes'];
}
interface OtlpBody {
  resourceSpans: { resource: ExportedResource; scopeSpans: { spans: ExportedSpan[] }[] }[];
}

/** An OTLP/HTTP protobuf body, in the JSON encoding's shape (ids as hex). */
function fromProtobuf(raw: Buffer): OtlpBody {
  const request = otlpProto.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  const hex = (b: unknown) => (b instanceof Uint8Array && b.length > 0 ? Buffer.from(b).toString('hex') : undefined);
  const object = request.toObject(request.decode(raw), { longs: Number, bytes: Array }) as OtlpBody;
  for (const rs of object.resourceSpans)
    for (const ss of rs.scopeSpans)
      ss.spans = ss.spans.map((s) => ({
        ...s,
        traceId: hex(Uint8Array.from(s.traceId as unknown as number[])) as string,
        spanId: hex(Uint8Array.from(s.spanId as unknown as number[])) as string,
        parentSpanId: hex(Uint8Array.from((s.parentSpanId ?? []) as unknown as number[])),
      }));
  return object;
}

/** An OTLP/HTTP receiver (JSON or protobuf): every request body kept as text, its spans collected. */
async function startReceiver() {
  const bodies: string[] = [];
  const spans: ExportedSpan[] = [];
  const resources: ExportedResource[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-type']?.includes('protobuf')
        ? fromProtobuf(raw)
        : (JSON.parse(raw.toString('utf8')) as OtlpBody);
      bodies.push(JSON.stringify(body));
      for (const rs of body.resourceSpans) {
        resources.push(rs.resource);
        for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    spans,
    resources,
    close: () => new Promise((r) => server.close(r)),
  };
}

const attr = (span: ExportedSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value && Object.values(value)[0];
};

/** The chain of span names from `span` up to the trace's root (or a parent not exported here). */
function ancestry(spans: ExportedSpan[], span: ExportedSpan): string[] {
  const names: string[] = [];
  for (let s: ExportedSpan | undefined = span; s; s = spans.find((p) => p.spanId === s?.parentSpanId))
    names.push(s.name);
  return names;
}

describe('traces', () => {
  let env: TestWorkflowEnvironment;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let tracing: Tracing | undefined;
  let stack: DocsAdminStack;
  let client: Client;
  const taskQueue = uniqueTaskQueue('tracing');

  before(async () => {
    receiver = await startReceiver();
    tracing = await startTracing(
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      'docs-admin-test',
    );
    env = await createDevEnv();
    client = new Client({ connection: env.connection, namespace: env.namespace, interceptors: clientInterceptors() });
    stack = await startDocsAdminStack(
      env,
      { agentActiveMs: 200, exportQueuedMs: 100, exportDurationMs: 400 },
      { ADMIN_API_KEY: KEY, TEMPORAL_TASK_QUEUE: taskQueue },
    );
  });

  after(async () => {
    await stack?.close();
    await stopTracing();
    await env?.teardown();
    await receiver?.close();
  });

  test('an agent job and an export: one trace each, linked from the start to the HTTP calls', async () => {
    assert.ok(tracing, 'tracing is on');
    const started = await startAgentJob(
      client,
      { projectId: `trace-${process.pid}`, prompt: PROMPT },
      { taskQueue, traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01` },
    );
    const agent = await awaitAgentJob(client, started.workflowId);
    const exported = await runExport(client, { domain: 'docs.trace.example' }, { taskQueue });
    await tracing.flush();
    const httpSpan = (route: string, traceId?: string) =>
      receiver.spans.find((s) => attr(s, 'http.route') === route && (!traceId || s.traceId === traceId));
    await waitFor(
      async () => {
        await tracing?.flush();
        return (
          httpSpan('/v2/agent/{projectId}/job/{id}', CALLER_TRACE_ID) &&
          httpSpan('/v1/static-export/jobs/{jobId}/bundle')
        );
      },
      { timeoutMs: 20_000, what: 'the HTTP spans of both jobs' },
    );

    // The agent job continues the caller's trace: start → RunWorkflow → activity → HTTP create.
    const create = httpSpan('/v2/agent/{projectId}/job', CALLER_TRACE_ID);
    assert.ok(create, 'the create call is in the caller trace');
    assert.equal(create.name, 'POST /v2/agent/{projectId}/job');
    assert.equal(attr(create, 'http.response.status_code'), 201);
    assert.equal(attr(create, 'temporal.activity.attempt'), 1);
    const chain = ancestry(receiver.spans, create);
    assert.deepEqual(chain.slice(0, 3), [
      'POST /v2/agent/{projectId}/job',
      `RunActivity:${chain[1]?.split(':')[1]}`,
      chain[2],
    ]);
    assert.match(chain[2] as string, /^StartActivity:/);
    assert.ok(chain.includes('RunWorkflow:agentJob'), chain.join(' < '));
    assert.equal(chain.at(-1), 'UpdateWithStartWorkflow:jobId');
    const root = receiver.spans.find(
      (s) => s.name === 'UpdateWithStartWorkflow:jobId' && s.traceId === CALLER_TRACE_ID,
    );
    assert.equal(root?.parentSpanId, CALLER_SPAN_ID);
    const ask = receiver.spans.find((s) => s.name === LIMITER_SPAN && s.traceId === CALLER_TRACE_ID);
    assert.ok(ask, 'the limiter ask is in the job trace');
    assert.equal(attr(ask, 'docs_admin.limiter.answer'), 'granted');
    assert.equal(agent.status, 'completed');

    // The export: its own trace, from StartWorkflow to the bundle call.
    const bundle = httpSpan('/v1/static-export/jobs/{jobId}/bundle');
    assert.ok(bundle);
    assert.notEqual(bundle.traceId, CALLER_TRACE_ID);
    const exportChain = ancestry(receiver.spans, bundle);
    assert.ok(exportChain.includes('RunWorkflow:staticExport'), exportChain.join(' < '));
    assert.equal(exportChain.at(-1), 'StartWorkflow:staticExport');
    const exportTrace = receiver.spans.filter((s) => s.traceId === bundle.traceId);
    assert.ok(exportTrace.some((s) => s.name === 'POST /v1/static-export/jobs'));
    assert.ok(exportTrace.some((s) => s.name === 'GET /v1/static-export/jobs/{jobId}'));

    // None of the private values, anywhere in what was exported.
    const everything = receiver.bodies.join('\n');
    for (const secret of [
      PROMPT,
      'rewrite the quickstart',
      KEY,
      exported.bundleUrl,
      new URL(exported.bundleUrl).search,
    ]) {
      assert.ok(!everything.includes(secret), `a span carries a private value (${secret.slice(0, 12)}...)`);
    }
  });

  test('http/protobuf: the worker-side spans decode, with the service name, the route template, a 429 and its Retry-After', async () => {
    await stopTracing();
    const protobuf = await startTracing(
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces` },
      'docs-admin-protobuf-test',
    );
    assert.equal(protobuf?.protocol, 'http/protobuf');
    // An API that allows one create a minute and says when to come back: the second create meets a 429.
    const limited = await startEmulator({ rateLimit: { limit: 1, windowMs: 60_000 }, retryAfterForm: 'seconds' });
    const api = new AdminApiClient({ baseUrl: limited.url, apiKey: KEY });
    try {
      await inSpan('protobuf-test', {}, async () => {
        await api.createAgentJob(`proto-${process.pid}`, PROMPT);
        await assert.rejects(api.createAgentJob(`proto-${process.pid}`, PROMPT), { status: 429 });
      });
    } finally {
      await api.close();
      await limited.close();
    }
    await protobuf?.flush();
    const create = await waitFor(
      () =>
        receiver.spans.find(
          (s) =>
            s.name === 'POST /v2/agent/{projectId}/job' &&
            attr(s, 'http.response.status_code') === 201 &&
            receiver.spans.some((p) => p.spanId === s.parentSpanId && p.name === 'protobuf-test'),
        ),
      { timeoutMs: 10_000, what: 'the protobuf-encoded create span' },
    );
    assert.equal(attr(create, 'http.route'), '/v2/agent/{projectId}/job');
    const limitedCreate = receiver.spans.find(
      (s) => s.parentSpanId === create.parentSpanId && attr(s, 'http.response.status_code') === 429,
    );
    assert.ok(limitedCreate, 'the 429 is a span of its own');
    assert.equal(attr(limitedCreate, 'error.type'), '429');
    const retryAfter = attr(limitedCreate, 'http.response.header.retry-after') as { values: { stringValue: string }[] };
    assert.match(retryAfter.values[0]?.stringValue ?? '', /^\d+$/);
    assert.ok(
      receiver.resources.some((r) =>
        r.attributes.some((a) => a.key === 'service.name' && Object.values(a.value)[0] === 'docs-admin-protobuf-test'),
      ),
    );
    assert.ok(!receiver.bodies.join('\n').includes(PROMPT));
  });
});
