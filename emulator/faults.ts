// Fault injection: rules per route, fired for the next N matching calls or with a probability drawn
// from a seeded RNG (reproducible runs).
import type { AdminApiOperation } from '../src/api/types';
import { seededRandom } from './seeded-random';

export type EmulatorRoute = AdminApiOperation | 'downloadBundle';

export type FaultKind =
  | '500-before-commit'
  | '500-after-commit'
  | '503'
  | 'reset-before-commit'
  | 'reset-after-commit'
  | 'slow'
  | 'non-json'
  | '429';

export interface FaultRule {
  /** Route it applies to, or '*' for every API route (control endpoints are never faulted). */
  route: EmulatorRoute | '*';
  kind: FaultKind;
  /** Fire on the next `count` matching calls, then stop. */
  count?: number;
  /** Fire with this probability (0..1) on each matching call. Without count and probability: always. */
  probability?: number;
  /** 'slow': delay before handling (default 10 s). */
  delayMs?: number;
  /** '503' and '429': Retry-After seconds (default 1). */
  retryAfterSeconds?: number;
}

export class FaultInjector {
  #rules: FaultRule[] = [];
  #random: () => number;

  constructor(seed: number) {
    this.#random = seededRandom(seed);
  }

  set(rules: readonly FaultRule[], seed?: number): void {
    for (const rule of rules) validateRule(rule);
    this.#rules = rules.map((r) => ({ ...r }));
    if (seed !== undefined) this.#random = seededRandom(seed);
  }

  rules(): FaultRule[] {
    return this.#rules.map((r) => ({ ...r }));
  }

  /** The fault to apply to this call, if any (first matching rule that fires). */
  pick(route: EmulatorRoute): FaultRule | undefined {
    if (this.#rules.length === 0) return undefined;
    for (let i = 0; i < this.#rules.length; i++) {
      const rule = this.#rules[i]!;
      if (rule.route !== '*' && rule.route !== route) continue;
      if (rule.count !== undefined) {
        if (rule.count <= 0) continue;
        rule.count -= 1;
        if (rule.count === 0) this.#rules.splice(i, 1);
        return rule;
      }
      if (rule.probability === undefined || this.#random() < rule.probability) return rule;
    }
    return undefined;
  }
}

const KINDS: ReadonlySet<string> = new Set([
  '500-before-commit',
  '500-after-commit',
  '503',
  'reset-before-commit',
  'reset-after-commit',
  'slow',
  'non-json',
  '429',
]);
const ROUTES: ReadonlySet<string> = new Set([
  '*',
  'createAgentJob',
  'getAgentJob',
  'sendAgentMessage',
  'startExport',
  'getExport',
  'generateBundle',
  'triggerUpdate',
  'getUpdateStatus',
  'downloadBundle',
]);

export function validateRule(rule: FaultRule): void {
  if (!rule || typeof rule !== 'object') throw new Error('fault rule must be an object');
  if (!ROUTES.has(rule.route)) throw new Error(`unknown fault route "${String(rule.route)}"`);
  if (!KINDS.has(rule.kind)) throw new Error(`unknown fault kind "${String(rule.kind)}"`);
  if (rule.count !== undefined && (!Number.isInteger(rule.count) || rule.count < 0))
    throw new Error('count must be an integer >= 0');
  if (rule.probability !== undefined && !(rule.probability >= 0 && rule.probability <= 1)) {
    throw new Error('probability must be within 0..1');
  }
}
