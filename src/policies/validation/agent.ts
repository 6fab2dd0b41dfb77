// Validators for agent job input, shared by the agentJob workflow (at start and in the sendMessage
// update validator), the agent activities and the CLI. Pure: each returns every problem it finds as
// plain sentences that name the field, never echoing more than a short prefix of the value.
import { type AgentJobOptions, agentJobCarry } from '../../shared/agent-job';
import { type RunOrigin, carriedStateProblems } from './carry';

/**
 * Largest prompt we accept, in characters. The API publishes no maximum, so this is ours: generous
 * for a real instruction, small enough to keep workflow history and request bodies sane.
 */
export const DEFAULT_MAX_PROMPT_LENGTH = 20_000;
/** Project ids become a URL path segment and part of workflow ids. */
export const MAX_PROJECT_ID_LENGTH = 200;
/** Request ids become part of workflow ids. */
export const MAX_REQUEST_ID_LENGTH = 200;

export interface AgentValidationOptions {
  /** Default DEFAULT_MAX_PROMPT_LENGTH. */
  maxPromptLength?: number;
}

const ID_PATTERN = /^[A-Za-z0-9._~:@-]+$/;

function checkId(field: string, value: unknown, maxLength: number, required: boolean): string[] {
  if (value === undefined || value === null) return required ? [`${field} is required`] : [];
  if (typeof value !== 'string') return [`${field} must be a string`];
  if (value.trim() === '') return [`${field} must not be empty`];
  if (value.length > maxLength) return [`${field} is ${value.length} characters long; the maximum is ${maxLength}`];
  if (!ID_PATTERN.test(value))
    return [`${field} may contain only letters, digits and . _ ~ : @ - (no spaces or slashes)`];
  return [];
}

export function validateProjectId(projectId: unknown): string[] {
  return checkId('projectId', projectId, MAX_PROJECT_ID_LENGTH, true);
}

export function validateRequestId(requestId: unknown): string[] {
  return checkId('requestId', requestId, MAX_REQUEST_ID_LENGTH, false);
}

export function validatePrompt(prompt: unknown, options: AgentValidationOptions = {}): string[] {
  const max = options.maxPromptLength ?? DEFAULT_MAX_PROMPT_LENGTH;
  if (prompt === undefined || prompt === null) return ['prompt is required'];
  if (typeof prompt !== 'string') return ['prompt must be a string'];
  if (prompt.trim().length === 0) return ['prompt must contain at least one non-blank character'];
  if (prompt.length > max) return [`prompt is ${prompt.length} characters long; the maximum is ${max}`];
  return [];
}

/** Every problem with an agentJob input `{projectId, prompt, requestId?}`; empty when valid. */
export function validateAgentJobInput(input: unknown, options: AgentValidationOptions = {}): string[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return ['input must be an object {projectId, prompt, requestId?}'];
  }
  const record = input as Record<string, unknown>;
  return [
    ...validateProjectId(record.projectId),
    ...validatePrompt(record.prompt, options),
    ...validateRequestId(record.requestId),
    ...validateParkedTimeout(record.parkedTimeoutMs),
  ];
}

/** The first words of a prompt, for messages that must say which request they mean (never the whole prompt). */
export function promptPreview(prompt: string, maxChars = 60): string {
  const flat = prompt.replace(/\s+/g, ' ').trim();
  if (flat.length <= maxChars) return flat;
  const cut = flat.slice(0, maxChars);
  const lastSpace = cut.lastIndexOf(' ');
  return `${lastSpace > maxChars / 2 ? cut.slice(0, lastSpace) : cut}…`;
}

/** A parked job's time limit: whole milliseconds, at least a second (undefined: the 7-day default). */
export function validateParkedTimeout(value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1_000)
    return ['parkedTimeoutMs must be a whole number of milliseconds, at least 1000'];
  return [];
}

/** The job id an operator hands to `resolve`. */
export function validateJobId(jobId: unknown): string[] {
  return checkId('jobId', jobId, MAX_REQUEST_ID_LENGTH, true);
}

/**
 * Problems with agentJob's second argument: an object whose carry (the job it polls, skipping the
 * create) comes only from the workflow's own past (`origin`: workflowInfo()).
 */
export function agentOptionsProblems(options: unknown, origin: RunOrigin): string[] {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    return ['the second argument, when given, must be an object {maxPollsPerRun?, ...}'];
  const { carry, maxPollsPerRun, poll, nonIdempotentCallTimeoutMs } = options as AgentJobOptions;
  const problems = carriedStateProblems(origin, { carry }, agentJobCarry);
  if (maxPollsPerRun !== undefined && !(Number.isInteger(maxPollsPerRun) && maxPollsPerRun >= 1))
    problems.push('maxPollsPerRun must be an integer >= 1');
  problems.push(...pollOverrideProblems(poll));
  if (nonIdempotentCallTimeoutMs !== undefined && !within(nonIdempotentCallTimeoutMs, 1_000, 10 * MINUTE_MS))
    problems.push('nonIdempotentCallTimeoutMs must be a number of milliseconds from 1000 to 600000');
  return problems;
}

const MINUTE_MS = 60_000;
const within = (value: unknown, min: number, max: number): boolean =>
  typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max;

/**
 * The polling overrides a starter may pass (tests poll fast): bounded, so no input turns a job's status
 * polls into a flood of the admin API (at most ten a second) or a job that never looks again (a day).
 */
export function pollOverrideProblems(poll: unknown): string[] {
  if (poll === undefined) return [];
  if (typeof poll !== 'object' || poll === null || Array.isArray(poll))
    return ['poll, when given, must be an object {floorMs?, fraction?, capMs?, jitter?}'];
  const { floorMs, fraction, capMs, jitter } = poll as NonNullable<AgentJobOptions['poll']>;
  const problems: string[] = [];
  if (floorMs !== undefined && !within(floorMs, 100, 60 * MINUTE_MS))
    problems.push('poll.floorMs must be from 100 to 3600000 ms');
  if (capMs !== undefined && !within(capMs, Math.max(100, floorMs ?? 100), 24 * 60 * MINUTE_MS))
    problems.push('poll.capMs must be from poll.floorMs (at least 100) to 86400000 ms');
  if (fraction !== undefined && !(within(fraction, 0, 1) && fraction > 0))
    problems.push('poll.fraction must be in (0, 1]');
  if (jitter !== undefined && !within(jitter, 0, 1)) problems.push('poll.jitter must be from 0 to 1');
  return problems;
}
