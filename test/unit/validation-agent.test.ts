// test-lane: parallel
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEFAULT_MAX_PROMPT_LENGTH,
  agentOptionsProblems,
  pollOverrideProblems,
  promptPreview,
  validateAgentJobInput,
  validateProjectId,
  validatePrompt,
  validateJobId,
  validateParkedTimeout,
  validateRequestId,
} from '../../src/policies/validation/agent';

describe('agent input validation', () => {
  test('parkedTimeoutMs is optional, whole milliseconds, at least a second; a resolve job id is a path-safe id', () => {
    assert.deepEqual(validateParkedTimeout(undefined), []);
    assert.deepEqual(validateParkedTimeout(60_000), []);
    for (const bad of [999, 1.5, -1, '7d', null])
      assert.match(validateParkedTimeout(bad).join(), /parkedTimeoutMs must be a whole number/);
    assert.deepEqual(validateAgentJobInput({ projectId: 'p', prompt: 'x', parkedTimeoutMs: 10 }).length, 1);
    assert.deepEqual(validateJobId('aj_123'), []);
    assert.match(validateJobId('').join(), /jobId must not be empty/);
    assert.match(validateJobId('a/b').join(), /jobId may contain only/);
  });

  test('a well-formed input has no problems', () => {
    assert.deepEqual(validateAgentJobInput({ projectId: 'proj_123', prompt: 'Fix the typo' }), []);
    assert.deepEqual(validateAgentJobInput({ projectId: 'p', prompt: 'x', requestId: 'ticket-42' }), []);
  });

  test('the project id is required, non-empty and path-safe', () => {
    assert.match(validateProjectId(undefined)[0]!, /projectId is required/);
    assert.match(validateProjectId('')[0]!, /projectId must not be empty/);
    assert.match(validateProjectId('   ')[0]!, /must not be empty/);
    assert.match(validateProjectId(42)[0]!, /must be a string/);
    assert.match(validateProjectId('a/b')[0]!, /no spaces or slashes/);
    assert.match(validateProjectId('x'.repeat(201))[0]!, /maximum is 200/);
  });

  test('the prompt needs one non-blank character and respects a configurable maximum', () => {
    assert.match(validatePrompt('')[0]!, /at least one non-blank character/);
    assert.match(validatePrompt(' \n\t')[0]!, /at least one non-blank character/);
    assert.match(validatePrompt(undefined)[0]!, /prompt is required/);
    assert.match(validatePrompt(['x'])[0]!, /must be a string/);
    assert.deepEqual(validatePrompt('x'), []);
    assert.deepEqual(validatePrompt('x'.repeat(DEFAULT_MAX_PROMPT_LENGTH)), []);
    assert.match(
      validatePrompt('x'.repeat(DEFAULT_MAX_PROMPT_LENGTH + 1))[0]!,
      /20001 characters long; the maximum is 20000/,
    );
    assert.match(validatePrompt('hello', { maxPromptLength: 4 })[0]!, /5 characters long; the maximum is 4/);
  });

  test('the request id is optional but must be usable in a workflow id', () => {
    assert.deepEqual(validateRequestId(undefined), []);
    assert.match(validateRequestId('')[0]!, /requestId must not be empty/);
    assert.match(validateRequestId('a b')[0]!, /no spaces/);
  });

  test('every problem is reported at once; non-objects are rejected', () => {
    assert.equal(validateAgentJobInput({ projectId: '', prompt: '' }).length, 2);
    assert.match(validateAgentJobInput(null)[0]!, /input must be an object/);
    assert.match(validateAgentJobInput('p')[0]!, /input must be an object/);
  });

  test('the prompt preview keeps the first words only', () => {
    assert.equal(promptPreview('  Fix   the\ntypo  '), 'Fix the typo');
    const preview = promptPreview(
      'Rewrite the quickstart page so that it explains authentication before anything else',
      40,
    );
    assert.ok(preview.length <= 41 && preview.endsWith('…'), preview);
    assert.ok(preview.startsWith('Rewrite the quickstart'));
  });
});

describe('agentJob options: polling overrides and call timeouts within bounds', () => {
  const fresh = { attempt: 1 };
  test('what the tests pass is accepted', () => {
    assert.deepEqual(
      agentOptionsProblems(
        { poll: { floorMs: 100, fraction: 0.5, capMs: 400 }, nonIdempotentCallTimeoutMs: 1_500 },
        fresh,
      ),
      [],
    );
  });
  test('a flood of polls, a job that never looks again, or a call without a timeout is refused', () => {
    assert.deepEqual(pollOverrideProblems({ floorMs: 1 }), ['poll.floorMs must be from 100 to 3600000 ms']);
    assert.deepEqual(pollOverrideProblems({ floorMs: 200, capMs: 150 }), [
      'poll.capMs must be from poll.floorMs (at least 100) to 86400000 ms',
    ]);
    assert.deepEqual(pollOverrideProblems({ capMs: 1e12 }), [
      'poll.capMs must be from poll.floorMs (at least 100) to 86400000 ms',
    ]);
    assert.deepEqual(pollOverrideProblems({ fraction: 0 }), ['poll.fraction must be in (0, 1]']);
    assert.deepEqual(pollOverrideProblems({ jitter: Number.NaN }), ['poll.jitter must be from 0 to 1']);
    assert.deepEqual(pollOverrideProblems('fast'), [
      'poll, when given, must be an object {floorMs?, fraction?, capMs?, jitter?}',
    ]);
    assert.deepEqual(agentOptionsProblems({ nonIdempotentCallTimeoutMs: 0 }, fresh), [
      'nonIdempotentCallTimeoutMs must be a number of milliseconds from 1000 to 600000',
    ]);
  });
});
