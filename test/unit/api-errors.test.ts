// test-lane: parallel
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import {
  type AdminApiError,
  ConflictError,
  ForbiddenError,
  InvalidRequestError,
  MalformedResponseError,
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  PlanRequiredError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
  errorClassForStatus,
  forbiddenCauses,
  forbiddenMessage,
} from '../../src/api/errors';
import { redact } from '../../src/api/credentials';
import { toApplicationFailure } from '../../src/activities/api-call';

describe('status -> error class', () => {
  const cases: [number, boolean, new (m: string, o?: { status?: number }) => AdminApiError, string, boolean][] = [
    [400, false, InvalidRequestError, 'InvalidRequest', false],
    [401, false, UnauthorizedError, 'Unauthorized', false],
    [403, false, ForbiddenError, 'Forbidden', false],
    [403, true, ForbiddenError, 'Forbidden', false],
    [404, false, NotFoundError, 'NotFound', false],
    [408, false, TimeoutError, 'Timeout', true],
    [409, false, ConflictError, 'Conflict', true],
    [413, false, InvalidRequestError, 'InvalidRequest', false],
    [422, false, InvalidRequestError, 'InvalidRequest', false],
    [429, false, RateLimitedError, 'RateLimited', true],
    [500, false, ServerError, 'ServerError', true],
    [502, true, ServerError, 'ServerError', true],
    [503, false, ServerError, 'ServerError', true],
    [302, false, MalformedResponseError, 'MalformedResponse', true],
  ];
  for (const [status, planRoute, cls, code, retryable] of cases) {
    test(`${status}${planRoute ? ' (export route)' : ''} -> ${code}`, () => {
      const ErrorClass = errorClassForStatus(status, planRoute);
      assert.equal(ErrorClass, cls);
      const err = new ErrorClass('x', { status });
      assert.equal(err.code, code);
      assert.equal(err.retryable, retryable);
      assert.equal(err.status, status);
      assert.equal(err.name, cls.name);
      assert.equal(err.outcomeUnknown, false);
    });
  }

  test("403 on a static-export route is PlanRequired only when the API's text names the plan or the feature", () => {
    assert.equal(errorClassForStatus(403, true, 'static export requires an Enterprise plan'), PlanRequiredError);
    assert.equal(errorClassForStatus(403, true, 'Static export is not enabled'), PlanRequiredError);
    assert.equal(errorClassForStatus(403, true, 'read-only key'), ForbiddenError);
    assert.equal(errorClassForStatus(403, false, 'Enterprise plan'), ForbiddenError);
  });

  test('a 403 names the operation and the likely causes in order: write scope, allowlist, plan', () => {
    const write = forbiddenMessage('startExport', 'POST', true, 'forbidden');
    assert.match(write, /^startExport: HTTP 403 Forbidden \(forbidden\); likely causes, most likely first: /);
    const order = ['write scope', 'IP allowlist', 'plan'].map((word) => write.indexOf(word));
    assert.ok(
      order.every((at, i) => at > 0 && (i === 0 || at > order[i - 1]!)),
      write,
    );
    const read = forbiddenMessage('getExport', 'GET', true, 'forbidden');
    assert.doesNotMatch(read, /write scope/);
    assert.ok(read.indexOf('IP allowlist') < read.indexOf('plan'), read);
    assert.deepEqual(forbiddenCauses('GET', false).length, 1);
    assert.deepEqual(forbiddenCauses('POST', false).length, 2);
  });

  test('network-level codes and OutcomeUnknown', () => {
    assert.equal(new NetworkError('x').retryable, true);
    assert.equal(new NetworkError('x').code, 'NetworkError');
    assert.equal(new MalformedResponseError('x').retryable, true);
    const unknown = new OutcomeUnknownError('x', { cause: new ServerError('boom', { status: 500 }), status: 500 });
    assert.equal(unknown.code, 'OutcomeUnknown');
    assert.equal(unknown.retryable, false);
    assert.equal(unknown.outcomeUnknown, true);
    assert.ok(unknown.cause instanceof ServerError);
  });
});

describe('toApplicationFailure', () => {
  test('type, nonRetryable, nextRetryDelay from Retry-After', () => {
    const failure = toApplicationFailure(
      new RateLimitedError('createAgentJob: HTTP 429: slow down', { status: 429, retryAfterMs: 1500 }),
      'createAgentJob',
    );
    assert.ok(failure instanceof ApplicationFailure);
    assert.equal(failure.type, 'RateLimited');
    assert.equal(failure.nonRetryable, false);
    assert.equal(failure.nextRetryDelay, 1500);
    assert.equal(failure.message, 'createAgentJob: HTTP 429: slow down');
    assert.deepEqual(failure.details, [
      { operation: 'createAgentJob', code: 'RateLimited', status: 429, retryAfterMs: 1500 },
    ]);
  });

  test('429 without Retry-After leaves the delay to the retry policy', () => {
    const failure = toApplicationFailure(new RateLimitedError('HTTP 429', { status: 429 }), 'createAgentJob');
    assert.equal(failure.nextRetryDelay, undefined);
    assert.equal(failure.nonRetryable, false);
  });

  test('non-retryable classes never carry a delay', () => {
    for (const err of [
      new InvalidRequestError('bad', { status: 400 }),
      new UnauthorizedError('no', { status: 401 }),
      new ForbiddenError('no', { status: 403 }),
      new PlanRequiredError('plan', { status: 403 }),
      new NotFoundError('gone', { status: 404, retryAfterMs: 5000 }),
      new OutcomeUnknownError('maybe'),
    ]) {
      const failure = toApplicationFailure(err, 'op');
      assert.equal(failure.type, err.code);
      assert.equal(failure.nonRetryable, true, err.code);
      assert.equal(failure.nextRetryDelay, undefined);
      assert.equal(failure.message, `op: ${err.message}`);
    }
  });

  test('retryable classes', () => {
    for (const err of [
      new ConflictError('c'),
      new ServerError('s'),
      new NetworkError('n'),
      new TimeoutError('t'),
      new MalformedResponseError('m'),
    ]) {
      assert.equal(toApplicationFailure(err).nonRetryable, false, err.code);
    }
    assert.equal(toApplicationFailure(new ServerError('s', { status: 503, retryAfterMs: 2000 })).nextRetryDelay, 2000);
  });

  test('message and cause chain are redacted', () => {
    const key = 'mint_very_secret_key_42';
    const inner = new Error(`socket closed; request had Authorization: Bearer ${key}`);
    inner.stack = `Error: leaked ${key}\n    at somewhere`;
    const err = new NetworkError(`createAgentJob failed with ${key}`, { cause: inner });
    const failure = toApplicationFailure(err, 'createAgentJob');
    const everything = JSON.stringify({
      message: failure.message,
      stack: failure.stack,
      cause: failure.cause?.message,
      causeStack: failure.cause?.stack,
      details: failure.details,
    });
    assert.ok(!everything.includes(key));
    assert.ok(!everything.includes('very_secret'));
    assert.match(failure.cause?.message ?? '', /\[redacted\]/);
  });
});

describe('redact', () => {
  test('removes configured secrets, bearer tokens, admin keys and Authorization headers', () => {
    assert.equal(redact('key is abc123secret here', ['abc123secret']), 'key is [redacted] here');
    assert.equal(
      redact('echoed as k3y.Secret+1 and K3Y.SECRET+1', ['k3y.Secret+1']),
      'echoed as [redacted] and [redacted]',
    );
    assert.equal(redact('Authorization: Bearer xyz.abc-def'), 'Authorization: [redacted]');
    assert.equal(redact('sent bearer sometoken123 to server'), 'sent bearer [redacted] to server');
    assert.equal(redact('{"authorization":"Bearer tok"}'), '{"authorization":"[redacted]"}');
    assert.equal(redact('the key mint_abcDEF_123-x was revoked'), 'the key [redacted] was revoked');
    assert.equal(redact('nothing secret here'), 'nothing secret here');
  });

  test("removes a URL's user:password, and leaves URLs without one alone", () => {
    assert.equal(redact('cannot reach postgres://app:hunter2@db/x'), 'cannot reach postgres://[redacted]@db/x');
    assert.equal(redact('see https://user@example.com/a'), 'see https://[redacted]@example.com/a');
    assert.equal(redact('see https://example.com/a?b=c@d'), 'see https://example.com/a?b=c@d');
  });
});
