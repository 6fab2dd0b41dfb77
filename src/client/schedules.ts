// Temporal Schedules (client.schedule, not cronSchedule) for the docs-admin workflows: periodic exports
// per domain (action: start staticExport) and keepers that are re-ensured on a timetable (action:
// start bundleKeeper; with the default overlap policy `skip` at most one keeper per schedule runs, and
// a keeper that ended is started again at the next tick).
import {
  DAYS_OF_WEEK,
  MONTHS,
  type CalendarSpecDescription,
  type Client,
  type Range,
  type ScheduleDescription,
  type ScheduleHandle,
  type ScheduleOverlapPolicy,
  type ScheduleSummary,
  type ScheduleUpdateOptions,
} from '@temporalio/client';
import { parseDuration } from '../config';
import { taskQueueOf } from '../connection/settings';
import { keeperInputProblems } from '../policies/validation/keeper';
import { SearchAttr } from '../shared/search-attributes';
import { WorkflowType } from '../shared/workflow-types';
import { exportWorkflowId, type StaticExportInput } from '../shared/static-export';
import { keeperWorkflowId, type BundleKeeperInput } from '../shared/bundle-keeper';
import { domainProblems, exportInputProblems, normalizeExportInput } from '../policies/validation/export';
import { formatDuration } from '../policies/validation/rate-limiter';
import { checkInput, InvalidInputError } from './errors';
import { exportSummary } from './export';

export const OVERLAP_POLICIES = [
  'skip',
  'buffer-one',
  'buffer-all',
  'cancel-other',
  'terminate-other',
  'allow-all',
] as const;
export type OverlapName = (typeof OVERLAP_POLICIES)[number];

export function toOverlapPolicy(name: string): ScheduleOverlapPolicy {
  if (!(OVERLAP_POLICIES as readonly string[]).includes(name)) {
    throw new InvalidInputError([`overlap must be one of ${OVERLAP_POLICIES.join(', ')} (got "${name}")`]);
  }
  return name.toUpperCase().replace(/-/g, '_') as ScheduleOverlapPolicy;
}

export function overlapName(policy: ScheduleOverlapPolicy | undefined): OverlapName | 'unspecified' {
  return policy ? (policy.toLowerCase().replace(/_/g, '-') as OverlapName) : 'unspecified';
}

export type ScheduleTarget =
  { kind: 'export'; input: StaticExportInput } | { kind: 'keeper'; input: BundleKeeperInput };

/** When a schedule fires. At least one of cron / every. */
export interface ScheduleTiming {
  /** Cron expressions (5 fields, or with seconds/years; @daily etc.). */
  cron?: string[];
  /** Intervals such as 1h, 30m, 1d. */
  every?: string[];
  /** IANA time zone for cron expressions (default UTC). */
  timezone?: string;
  /** Random delay added to each action, e.g. 30s. */
  jitter?: string;
}

export interface CreateScheduleOptions extends ScheduleTiming {
  /** Default export:<domain> or keeper:<domain>. */
  scheduleId?: string;
  taskQueue?: string;
  /** Default skip. */
  overlap?: OverlapName;
  paused?: boolean;
  note?: string;
}

export function defaultScheduleId(kind: ScheduleTarget['kind'], domain: string): string {
  return `${kind}:${domain}`;
}

/** The schedule id given, else the default for a domain; throws when neither says which schedule. */
export function resolveScheduleId(
  id: string | undefined,
  domain: string | undefined,
  kind: ScheduleTarget['kind'] = 'export',
): string {
  if (id) return id;
  if (domain) {
    checkInput(domainProblems(domain));
    return defaultScheduleId(kind, domain);
  }
  throw new InvalidInputError(['give a schedule id (or --domain D for export:D)']);
}

/** Every problem with a schedule's timing, each naming the option. */
export function timingProblems(timing: ScheduleTiming, requireOne = true): string[] {
  const problems: string[] = [];
  const cron = timing.cron ?? [];
  const every = timing.every ?? [];
  if (requireOne && cron.length === 0 && every.length === 0) problems.push('give --cron EXPR and/or --every DURATION');
  for (const expr of cron) {
    const fields = expr.trim().split(/\s+/);
    if (!(expr.trim().startsWith('@') || (fields.length >= 5 && fields.length <= 7))) {
      problems.push(
        `cron "${expr}" must have 5 fields (minute hour day-of-month month day-of-week), or be @hourly, @daily, ...`,
      );
    }
  }
  /** The duration `text` of option `what`, or NaN with the problem noted. */
  const duration = (what: string, text: string): number => {
    try {
      return parseDuration(text);
    } catch (err) {
      problems.push(`${what}: ${(err as Error).message}`);
      return Number.NaN;
    }
  };
  for (const text of every)
    if (duration('every', text) < 1_000) problems.push(`every "${text}" is shorter than one second`);
  if (timing.jitter !== undefined) duration('jitter', timing.jitter);
  if (timing.timezone !== undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timing.timezone });
    } catch {
      problems.push(`timezone "${timing.timezone}" is not an IANA time zone such as UTC or Europe/Paris`);
    }
  }
  return problems;
}

function specOf(timing: ScheduleTiming) {
  return {
    ...(timing.cron && timing.cron.length > 0 ? { cronExpressions: timing.cron } : {}),
    ...(timing.every && timing.every.length > 0
      ? { intervals: timing.every.map((text) => ({ every: parseDuration(text) })) }
      : {}),
    ...(timing.timezone ? { timezone: timing.timezone } : {}),
    ...(timing.jitter ? { jitter: parseDuration(timing.jitter) } : {}),
  };
}

function targetProblems(target: ScheduleTarget): string[] {
  return target.kind === 'export' ? exportInputProblems(target.input) : keeperInputProblems(target.input);
}

function actionOf(target: ScheduleTarget, taskQueue: string) {
  if (target.kind === 'export') {
    const input = normalizeExportInput(target.input);
    return {
      type: 'startWorkflow' as const,
      workflowType: WorkflowType.staticExport,
      // The server appends the scheduled time to this id: static-export:<domain>:scheduled-<time>.
      workflowId: exportWorkflowId(input.domain, 'scheduled'),
      taskQueue,
      args: [input],
      staticSummary: `${exportSummary(input)} (scheduled)`,
      typedSearchAttributes: [{ key: SearchAttr.domain, value: input.domain }],
    };
  }
  return {
    type: 'startWorkflow' as const,
    workflowType: WorkflowType.bundleKeeper,
    workflowId: keeperWorkflowId(target.input.domain),
    taskQueue,
    args: [target.input],
    staticSummary: `Bundle keeper for ${target.input.domain} (scheduled)`,
    typedSearchAttributes: [{ key: SearchAttr.domain, value: target.input.domain }],
  };
}

/** Creates a schedule; throws InvalidInputError before contacting the server when anything is invalid. */
export async function createDocsSchedule(
  client: Client,
  target: ScheduleTarget,
  options: CreateScheduleOptions,
): Promise<ScheduleHandle> {
  const problems = [...targetProblems(target), ...timingProblems(options)];
  const overlap = toOverlapPolicy(options.overlap ?? 'skip');
  checkInput(problems);
  const scheduleId = options.scheduleId ?? defaultScheduleId(target.kind, target.input.domain);
  return client.schedule.create({
    scheduleId,
    spec: specOf(options),
    action: actionOf(target, taskQueueOf(options.taskQueue)),
    policies: { overlap },
    state: { paused: options.paused ?? false, ...(options.note ? { note: options.note } : {}) },
    // No memo: a Schedule's memo cannot be updated, so one encrypted with an old key would outlive it
    // (schedule-rekey.ts). The kind and domain are read back from the action and DocsDomain.
    typedSearchAttributes: [{ key: SearchAttr.domain, value: target.input.domain }],
  });
}

export interface UpdateScheduleChanges extends ScheduleTiming {
  overlap?: OverlapName;
  /** For export schedules: a new version label / page list. */
  version?: string;
  paths?: string[];
}

/** Changes the timing, overlap policy or export input of a schedule; untouched fields stay as they are. */
export async function updateDocsSchedule(
  client: Client,
  scheduleId: string,
  changes: UpdateScheduleChanges,
): Promise<void> {
  const problems = timingProblems(changes, false);
  const overlap = changes.overlap ? toOverlapPolicy(changes.overlap) : undefined;
  checkInput(problems);
  const handle = client.schedule.getHandle(scheduleId);
  await handle.update((previous) => {
    const retime = (changes.cron?.length ?? 0) > 0 || (changes.every?.length ?? 0) > 0;
    const spec = retime
      ? specOf({ ...changes, timezone: changes.timezone ?? previous.spec.timezone, jitter: changes.jitter })
      : {
          ...previous.spec,
          ...(changes.timezone ? { timezone: changes.timezone } : {}),
          ...(changes.jitter ? { jitter: parseDuration(changes.jitter) } : {}),
        };
    let action = previous.action;
    if (
      (changes.version !== undefined || changes.paths !== undefined) &&
      action.type === 'startWorkflow' &&
      action.workflowType === WorkflowType.staticExport
    ) {
      const input = { ...(action.args?.[0] as StaticExportInput) };
      if (changes.version !== undefined) input.version = changes.version;
      if (changes.paths !== undefined) input.paths = changes.paths;
      const inputProblems = exportInputProblems(input);
      checkInput(inputProblems);
      action = { ...action, args: [input], staticSummary: `${exportSummary(input)} (scheduled)` };
    }
    const updated: ScheduleUpdateOptions = {
      spec,
      action,
      policies: { ...previous.policies, ...(overlap ? { overlap } : {}) },
      state: previous.state,
    };
    return updated;
  });
}

/** A plain, printable view of a schedule (for the CLI's describe/list and their --json). */
export interface ScheduleView {
  scheduleId: string;
  kind: string | null;
  domain: string | null;
  workflowType: string | null;
  cron: string[];
  every: string[];
  timezone: string | null;
  overlap: string;
  paused: boolean;
  note: string | null;
  nextActionTimes: string[];
  recentActions: { scheduledAt: string; workflowId: string }[];
  numActionsTaken?: number;
}

function field<U>(ranges: Range<U>[], toNumber: (u: U) => number, min: number, max: number): string {
  if (ranges.length === 0) return '*';
  const parts = ranges.map((r) => {
    const start = toNumber(r.start);
    const end = toNumber(r.end ?? r.start);
    const step = r.step ?? 1;
    const span = start === min && end === max ? '*' : end === start ? String(start) : `${start}-${end}`;
    return step > 1 ? `${span}/${step}` : span;
  });
  return parts.join(',');
}

/** A calendar spec (the server's form of a cron expression) back as `minute hour day-of-month month day-of-week`. */
export function cronOfCalendar(calendar: CalendarSpecDescription): string {
  const month = (m: (typeof MONTHS)[number]) => MONTHS.indexOf(m) + 1;
  const day = (d: (typeof DAYS_OF_WEEK)[number]) => DAYS_OF_WEEK.indexOf(d);
  const num = (n: number) => n;
  return [
    field(calendar.minute, num, 0, 59),
    field(calendar.hour, num, 0, 23),
    field(calendar.dayOfMonth, num, 1, 31),
    field(calendar.month, month, 1, 12),
    field(calendar.dayOfWeek, day, 0, 6),
  ].join(' ');
}

const KIND_OF_WORKFLOW: Record<string, ScheduleTarget['kind']> = {
  [WorkflowType.staticExport]: 'export',
  [WorkflowType.bundleKeeper]: 'keeper',
};

/** Whether a schedule's action starts one of this project's workflows. */
export function startsOurs(action: ScheduleSummary['action'] | ScheduleDescription['action']): boolean {
  return action?.type === 'startWorkflow' && Object.hasOwn(KIND_OF_WORKFLOW, action.workflowType);
}

export function viewOf(schedule: ScheduleDescription | ScheduleSummary): ScheduleView {
  // Schedules of earlier releases carry {kind, domain} in their memo.
  const memo = schedule.memo;
  const action = schedule.action;
  const workflowType = action && action.type === 'startWorkflow' ? action.workflowType : null;
  const domain = schedule.typedSearchAttributes?.get(SearchAttr.domain) ?? memo?.domain;
  return {
    scheduleId: schedule.scheduleId,
    kind: (workflowType && KIND_OF_WORKFLOW[workflowType]) ?? (typeof memo?.kind === 'string' ? memo.kind : null),
    domain: typeof domain === 'string' ? domain : null,
    workflowType,
    cron: (schedule.spec?.calendars ?? []).map(cronOfCalendar),
    every: (schedule.spec?.intervals ?? []).map((i) => formatDuration(Number(i.every))),
    timezone: schedule.spec?.timezone ?? null,
    overlap: 'policies' in schedule ? overlapName(schedule.policies.overlap) : 'unspecified',
    paused: schedule.state.paused,
    note: schedule.state.note ?? null,
    nextActionTimes: schedule.info.nextActionTimes.map((d) => d.toISOString()),
    recentActions: schedule.info.recentActions.map((a) => ({
      scheduledAt: a.scheduledAt.toISOString(),
      workflowId: a.action.workflow.workflowId,
    })),
    ...('numActionsTaken' in schedule.info ? { numActionsTaken: schedule.info.numActionsTaken } : {}),
  };
}

/** Every schedule in the namespace whose action starts one of this project's workflows. */
export async function listDocsSchedules(client: Client): Promise<ScheduleView[]> {
  const views: ScheduleView[] = [];
  for await (const summary of client.schedule.list()) {
    if (startsOurs(summary.action)) views.push(viewOf(summary));
  }
  return views.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
}
