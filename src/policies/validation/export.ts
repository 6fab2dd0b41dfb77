// Pure validators for a static export request (docs/contract.md, the admin API: `domain` is a bare hostname, `version`
// labels the export, `paths` are page paths). Used by the staticExport workflow at start and by the
// CLI before it starts anything. No I/O, no Temporal imports: safe in the workflow sandbox.
import { type StaticExportInput, type StaticExportOptions, staticExportCarry } from '../../shared/static-export';
import { type RunOrigin, carriedStateProblems } from './carry';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/** Returns why `value` is not a bare hostname (no scheme, port, slash or path), or null if it is. */
export function hostnameProblem(value: unknown): string | null {
  if (typeof value !== 'string') return 'domain must be a string';
  if (value === '') return 'domain must not be empty';
  if (value.length > 253) return 'domain is longer than 253 characters';
  if (value.includes('://')) return `domain must be a bare hostname without a scheme (got "${value}")`;
  if (/[/?#]/.test(value)) return `domain must be a bare hostname without a path (got "${value}")`;
  if (value.includes(':')) return `domain must be a bare hostname without a port (got "${value}")`;
  if (/\s/.test(value)) return 'domain must not contain whitespace';
  const labels = value.split('.');
  if (labels.some((label) => !LABEL.test(label))) {
    return `domain "${value}" is not a valid hostname (dot-separated labels of letters, digits and inner hyphens)`;
  }
  return null;
}

/** hostnameProblem as a list (empty when the domain is fine), for callers that collect problems. */
export function domainProblems(domain: unknown): string[] {
  const problem = hostnameProblem(domain);
  return problem ? [problem] : [];
}

/** Every problem with a staticExport input, each a short sentence naming the field; empty if valid. */
export function exportInputProblems(input: unknown): string[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return ['input must be an object {domain, version?, paths?}'];
  }
  const { domain, version, paths } = input as Record<string, unknown>;
  const problems: string[] = [];
  const domainProblem = hostnameProblem(domain);
  if (domainProblem) problems.push(domainProblem);
  if (version !== undefined && version !== null) {
    if (typeof version !== 'string' || version.trim() === '')
      problems.push('version, when given, must be a non-empty string');
  }
  if (paths !== undefined && paths !== null) {
    if (!Array.isArray(paths)) {
      problems.push('paths, when given, must be an array of strings');
    } else if (paths.length === 0) {
      problems.push('paths, when given, must not be empty (omit it to export every page)');
    } else {
      paths.forEach((path: unknown, index) => {
        if (typeof path !== 'string' || path.trim() === '') problems.push(`paths[${index}] must be a non-empty string`);
      });
    }
  }
  return problems;
}

/** The input with only the known fields, null/undefined optional fields dropped (what the API gets). */
export function normalizeExportInput(input: StaticExportInput): StaticExportInput {
  const out: StaticExportInput = { domain: input.domain };
  if (input.version !== undefined && input.version !== null) out.version = input.version;
  if (input.paths !== undefined && input.paths !== null) out.paths = [...input.paths];
  return out;
}

/**
 * Problems with staticExport's second argument: an object whose carry (the job it polls and bundles)
 * comes only from the workflow's own past (`origin`: workflowInfo()).
 */
export function exportOptionsProblems(options: unknown, origin: RunOrigin): string[] {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    return ['the second argument, when given, must be an object {maxPollsPerRun?}'];
  const { carry, maxPollsPerRun } = options as StaticExportOptions;
  const problems = carriedStateProblems(origin, { carry }, staticExportCarry);
  if (maxPollsPerRun !== undefined && !(Number.isInteger(maxPollsPerRun) && maxPollsPerRun >= 1))
    problems.push('maxPollsPerRun must be an integer >= 1');
  return problems;
}
