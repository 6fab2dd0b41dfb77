// The docs-admin CLI (`npm run cli -- <command>`): start, await, inspect and schedule the workflows.
// Every input is validated before anything connects or starts; any failure ends with exit code != 0
// and ONE line on stderr; with `--wait --json` the last stdout line is one JSON object.
import type { Client } from '@temporalio/client';
import { Command, CommanderError, Option } from 'commander';
import {
  awaitAgentJob,
  awaitExport,
  connectClient,
  ensureKeeper,
  failureReason,
  getStatus,
  InvalidInputError,
  keeperInputProblems,
  publish,
  startAgentJob,
  startExport,
} from '../client';
import { agentReporter, exportReporter, type ProgressStream } from './progress';
import {
  OVERLAP_POLICIES,
  backfillDocsSchedule,
  createDocsSchedule,
  deleteDocsSchedule,
  describeDocsSchedule,
  listDocsSchedules,
  pauseDocsSchedule,
  resolveScheduleId,
  timingProblems,
  triggerDocsSchedule,
  unpauseDocsSchedule,
  updateDocsSchedule,
  type OverlapName,
  type ScheduleTarget,
  type ScheduleView,
} from '../client/schedules';
import type { BundleKeeperInput, DeploymentKind, SinkConfig, StaticExportInput } from '../shared';
import { validateAgentJobInput } from '../policies/validation/agent';
import { DEPLOYMENT_KINDS } from '../policies/validation/deployment';
import { exportInputProblems, hostnameProblem, normalizeExportInput } from '../policies/validation/export';

export interface CliIo {
  stdout: { write(chunk: string): boolean };
  stderr: ProgressStream;
  env: NodeJS.ProcessEnv;
}

/** Exit codes: 0 success, 1 a failure (workflow failed, server error), 2 bad input or usage. */
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

class UsageError extends Error {}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function check(problems: string[]): void {
  if (problems.length > 0) throw new InvalidInputError(problems);
}

/** The one stderr line for any error. */
export function errorLine(err: unknown): string {
  let text: string;
  if (err instanceof InvalidInputError) text = `invalid input: ${err.problems.join('; ')}`;
  else if (err instanceof UsageError) text = err.message;
  else if (err instanceof Error && (err.name === 'WorkflowFailedError' || err.name === 'WorkflowUpdateFailedError')) {
    text = `workflow failed: ${failureReason(err.cause ?? err)}`;
  } else if (err instanceof Error) text = err.message;
  else text = String(err);
  return `error: ${text.replace(/\s*\n\s*/g, ' ').trim()}`;
}

function exitCodeOf(err: unknown): number {
  return err instanceof InvalidInputError || err instanceof UsageError ? EXIT_USAGE : EXIT_FAILURE;
}

function sinkFrom(opts: { configFile?: string; webhook?: string; command?: string; mirrorDir?: string; mirrorUrlPrefix?: string }): SinkConfig {
  const chosen: SinkConfig[] = [];
  if (opts.configFile !== undefined) chosen.push({ type: 'file', path: opts.configFile });
  if (opts.webhook !== undefined) chosen.push({ type: 'webhook', url: opts.webhook });
  if (opts.command !== undefined) chosen.push({ type: 'command', command: opts.command });
  if (opts.mirrorDir !== undefined || opts.mirrorUrlPrefix !== undefined) {
    if (opts.mirrorDir === undefined || opts.mirrorUrlPrefix === undefined) {
      throw new InvalidInputError(['the mirror sink needs both --mirror-dir and --mirror-url-prefix']);
    }
    chosen.push({ type: 'mirror', dir: opts.mirrorDir, urlPrefix: opts.mirrorUrlPrefix });
  }
  if (chosen.length !== 1) {
    throw new InvalidInputError([
      'give exactly one sink: --config-file F, --webhook URL, --command CMD, or --mirror-dir DIR --mirror-url-prefix URL',
    ]);
  }
  return chosen[0] as SinkConfig;
}

interface SinkOpts {
  configFile?: string;
  webhook?: string;
  command?: string;
  mirrorDir?: string;
  mirrorUrlPrefix?: string;
  version?: string;
  kind?: string;
}

function keeperInputFrom(domain: string, opts: SinkOpts): BundleKeeperInput {
  const input: BundleKeeperInput = { domain, sink: sinkFrom(opts) };
  if (opts.version !== undefined) input.version = opts.version;
  if (opts.kind !== undefined) input.kind = opts.kind as DeploymentKind;
  check(keeperInputProblems(input));
  return input;
}

function addSinkOptions(command: Command): Command {
  return command
    .option('--config-file <file>', 'sink: write staticExport.{enabled,bundleUrl,version} into this YAML/JSON config file')
    .option('--webhook <url>', 'sink: POST the verified bundle link to this URL')
    .option('--command <cmd>', 'sink: run this command (e.g. helm upgrade ...) with the link in its environment')
    .option('--mirror-dir <dir>', 'sink (air-gapped): copy the archive into this directory ...')
    .option('--mirror-url-prefix <url>', '... served at this stable internal URL prefix')
    .option('--version <version>', 'pin staticExport.version (default: the latest published)')
    .addOption(new Option('--kind <kind>', 'deployment kind').choices(DEPLOYMENT_KINDS as string[]).default(undefined, 'client-hosted'));
}

function printView(io: CliIo, view: ScheduleView): void {
  const lines = [
    `schedule ${view.scheduleId}${view.paused ? ' (paused)' : ''}`,
    `  action:   ${view.workflowType ?? '?'}${view.domain ? ` for ${view.domain}` : ''}`,
    ...(view.cron.length > 0 ? [`  cron:     ${view.cron.join(' | ')}${view.timezone ? ` (${view.timezone})` : ''}`] : []),
    ...(view.every.length > 0 ? [`  every:    ${view.every.join(', ')}`] : []),
    `  overlap:  ${view.overlap}`,
    ...(view.note ? [`  note:     ${view.note}`] : []),
    `  next:     ${view.nextActionTimes.slice(0, 3).join(', ') || '-'}`,
    ...(view.numActionsTaken !== undefined ? [`  actions:  ${view.numActionsTaken} taken`] : []),
    ...view.recentActions.slice(-3).map((a) => `  recent:   ${a.scheduledAt} -> ${a.workflowId}`),
  ];
  io.stdout.write(`${lines.join('\n')}\n`);
}

export function buildProgram(io: CliIo, connect: () => Promise<Client>): Command {
  let client: Client | undefined;
  const getClient = async () => (client ??= await connect());

  // Every command writes through io, reports errors on one line, and throws instead of exiting.
  const wired = (command: Command): Command =>
    command
      .configureOutput({
        writeOut: (s) => void io.stdout.write(s),
        writeErr: (s) => void io.stderr.write(s),
        outputError: (s, write) => write(`${s.trim().split('\n')[0]}\n`),
      })
      .exitOverride();

  const program = wired(
    new Command('docs-admin')
      .description('Start, await, inspect and schedule the docs-admin workflows (static export, bundle keeper, agent jobs).')
      .showSuggestionAfterError(true),
  );

  const subcommand = (name: string) => wired(program.command(name));

  // ---- export ----
  subcommand('export')
    .description('Export a docs site: start, poll until done, generate the bundle link.')
    .requiredOption('--domain <domain>', 'bare hostname of the docs site, e.g. docs.example.com')
    .option('--version <version>', 'version label to export (default: the latest published)')
    .option('--path <path>', 'export only this page path (repeatable)', collect)
    .option('--request-id <id>', 'idempotency key: the same id attaches to the same export')
    .option('--wait', 'wait for the result, showing progress on stderr')
    .option('--json', 'print JSON (with --wait, the last stdout line is the result object)')
    .action(async (opts: { domain: string; version?: string; path?: string[]; requestId?: string; wait?: boolean; json?: boolean }) => {
      const input: StaticExportInput = { domain: opts.domain };
      if (opts.version !== undefined) input.version = opts.version;
      if (opts.path !== undefined) input.paths = opts.path;
      check(exportInputProblems(input));
      const c = await getClient();
      const handle = await startExport(c, normalizeExportInput(input), { requestId: opts.requestId });
      if (!opts.wait) {
        io.stdout.write(opts.json ? `${JSON.stringify({ workflowId: handle.workflowId })}\n` : `${handle.workflowId}\n`);
        return;
      }
      io.stderr.write(`started ${handle.workflowId}\n`);
      const reporter = exportReporter(io.stderr, input.domain);
      let result;
      try {
        result = await awaitExport(c, handle.workflowId, { onProgress: (s) => reporter.update(s) });
        reporter.update({ phase: 'done', jobId: result.jobId, status: 'completed', progress: 100, pageCount: result.pageCount, polls: 0, lastPollAt: null, nextPollAt: null });
      } finally {
        reporter.stop();
      }
      const out = {
        workflowId: result.workflowId,
        jobId: result.jobId,
        domain: result.domain,
        pageCount: result.pageCount,
        bundleUrl: result.bundleUrl,
        expiresAt: result.expiresAt,
        sizeBytes: result.sizeBytes,
      };
      if (opts.json) io.stdout.write(`${JSON.stringify(out)}\n`);
      else {
        io.stdout.write(
          [
            `exported ${out.domain}: ${out.pageCount} pages, job ${out.jobId}`,
            `bundle:  ${out.bundleUrl}`,
            `size:    ${out.sizeBytes} bytes, link expires ${out.expiresAt}`,
            `workflow ${out.workflowId}`,
          ].join('\n') + '\n',
        );
      }
    });

  // ---- agent ----
  subcommand('agent')
    .description('Run an agent job: a prompt in, a pull request out.')
    .requiredOption('--project <projectId>', 'project id')
    .requiredOption('--prompt <text>', 'what the agent should change')
    .option('--request-id <id>', 'idempotency key: the same id never creates a second job (or a second PR)')
    .option('--wait', 'wait for the job to finish, showing its status on stderr')
    .option('--json', 'print JSON (with --wait, the last stdout line is the result object)')
    .action(async (opts: { project: string; prompt: string; requestId?: string; wait?: boolean; json?: boolean }) => {
      const input = { projectId: opts.project, prompt: opts.prompt, ...(opts.requestId !== undefined ? { requestId: opts.requestId } : {}) };
      check(validateAgentJobInput(input));
      const c = await getClient();
      const started = await startAgentJob(c, input);
      if (!opts.wait) {
        io.stdout.write(opts.json ? `${JSON.stringify({ workflowId: started.workflowId, jobId: started.jobId })}\n` : `${started.workflowId}\n${started.jobId}\n`);
        return;
      }
      io.stderr.write(`started ${started.workflowId} (job ${started.jobId})\n`);
      const reporter = agentReporter(io.stderr, started.jobId);
      let result;
      try {
        let polls = 0;
        result = await awaitAgentJob(c, started.workflowId, {
          onProgress: (s) => {
            polls = s.polls;
            reporter.update(s);
          },
          progressIntervalMs: 1_000,
        });
        reporter.update({ phase: 'done', jobId: result.jobId, status: result.status, prLink: result.prLink, polls, lastPollAt: null, nextPollAt: null });
      } finally {
        reporter.stop();
      }
      const out = { workflowId: result.workflowId, jobId: result.jobId, status: result.status, prLink: result.prLink };
      if (opts.json) io.stdout.write(`${JSON.stringify(out)}\n`);
      else {
        io.stdout.write(
          `agent job ${out.jobId}: ${out.status}, ${out.prLink ? `pull request ${out.prLink}` : 'no pull request (nothing changed)'}\nworkflow ${out.workflowId}\n`,
        );
      }
    });

  // ---- keep / publish ----
  addSinkOptions(
    subcommand('keep')
      .description("Ensure the domain's bundle keeper runs: it keeps the deployment on a valid, verified bundle link.")
      .requiredOption('--domain <domain>', 'bare hostname of the docs site'),
  )
    .option('--json', 'print JSON')
    .action(async (opts: SinkOpts & { domain: string; json?: boolean }) => {
      const input = keeperInputFrom(opts.domain, opts);
      const handle = await ensureKeeper(await getClient(), input);
      io.stdout.write(opts.json ? `${JSON.stringify({ workflowId: handle.workflowId })}\n` : `${handle.workflowId}\n`);
    });

  subcommand('publish')
    .description("Tell the domain's keeper that new content is published (it re-exports and re-applies).")
    .requiredOption('--domain <domain>', 'bare hostname of the docs site')
    .action(async (opts: { domain: string }) => {
      const problem = hostnameProblem(opts.domain);
      if (problem) throw new InvalidInputError([problem]);
      const { workflowId } = await publish(await getClient(), opts.domain);
      io.stdout.write(`publish signalled to ${workflowId}\n`);
    });

  // ---- status ----
  subcommand('status')
    .description("Show a workflow's state: execution status, summary, and its live `status` query.")
    .argument('<workflowId>', 'the workflow id (printed by export, agent and keep)')
    .option('--json', 'print one JSON object')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      if (workflowId.trim() === '') throw new InvalidInputError(['workflow id must not be empty']);
      const report = await getStatus(await getClient(), workflowId);
      if (opts.json) {
        io.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const lines = [
        `workflow ${report.workflowId} (${report.type})`,
        `  status:   ${report.status}`,
        ...(report.summary ? [`  summary:  ${report.summary}`] : []),
        `  started:  ${report.startTime}${report.closeTime ? `, closed ${report.closeTime}` : ''}`,
        ...Object.entries(report.searchAttributes).map(([k, v]) => `  ${k}: ${v}`),
        ...(report.details ? [`  details:  ${JSON.stringify(report.details)}`] : []),
        ...(report.result !== undefined ? [`  result:   ${JSON.stringify(report.result)}`] : []),
        ...(report.failure ? [`  failure:  ${report.failure}`] : []),
      ];
      io.stdout.write(`${lines.join('\n')}\n`);
    });

  // ---- schedule ----
  const schedule = subcommand('schedule').description('Manage Temporal Schedules for exports and keepers.');
  const scheduleSub = (name: string) => wired(schedule.command(name));
  const overlapOption = (dflt?: string) => {
    const option = new Option('--overlap <policy>', 'what to do when the previous run is still going').choices(OVERLAP_POLICIES as unknown as string[]);
    return dflt ? option.default(dflt) : option;
  };
  const idArgument = (cmd: Command) =>
    cmd.argument('[scheduleId]', 'schedule id (default export:<domain> with --domain)').option('--domain <domain>', 'the domain (schedule id export:<domain>)');

  interface TimingOpts {
    cron?: string[];
    every?: string[];
    timezone?: string;
    jitter?: string;
    overlap?: OverlapName;
  }
  const timingOptions = (cmd: Command) =>
    cmd
      .option('--cron <expr>', 'cron expression, e.g. "0 3 * * *" (repeatable)', collect)
      .option('--every <duration>', 'interval such as 1h, 30m, 1d (repeatable)', collect)
      .option('--timezone <tz>', 'IANA time zone for --cron (default UTC)')
      .option('--jitter <duration>', 'random delay added to each run, e.g. 30s');

  addSinkOptions(
    timingOptions(
      scheduleSub('create')
        .description('Create a schedule that starts an export (default) or ensures a keeper.')
        .requiredOption('--domain <domain>', 'bare hostname of the docs site')
        .option('--id <scheduleId>', 'schedule id (default export:<domain> or keeper:<domain>)')
        .addOption(new Option('--action <action>', 'what each run does').choices(['export', 'keep']).default('export'))
        .option('--path <path>', 'export only this page path (repeatable)', collect)
        .addOption(overlapOption('skip'))
        .option('--paused', 'create it paused')
        .option('--note <text>', 'a note shown with the schedule'),
    ),
  )
    .option('--json', 'print JSON')
    .action(async (opts: TimingOpts & SinkOpts & { domain: string; id?: string; action: 'export' | 'keep'; path?: string[]; paused?: boolean; note?: string; json?: boolean }) => {
      let target: ScheduleTarget;
      if (opts.action === 'keep') target = { kind: 'keeper', input: keeperInputFrom(opts.domain, opts) };
      else {
        const input: StaticExportInput = { domain: opts.domain };
        if (opts.version !== undefined) input.version = opts.version;
        if (opts.path !== undefined) input.paths = opts.path;
        target = { kind: 'export', input };
      }
      check([...(target.kind === 'export' ? exportInputProblems(target.input) : []), ...timingProblems(opts)]);
      const handle = await createDocsSchedule(await getClient(), target, {
        scheduleId: opts.id,
        cron: opts.cron,
        every: opts.every,
        timezone: opts.timezone,
        jitter: opts.jitter,
        overlap: opts.overlap,
        paused: opts.paused,
        note: opts.note,
      });
      io.stdout.write(opts.json ? `${JSON.stringify({ scheduleId: handle.scheduleId })}\n` : `${handle.scheduleId}\n`);
    });

  timingOptions(idArgument(scheduleSub('update').description("Change a schedule's timing, overlap policy, or export version/paths.")))
    .addOption(overlapOption())
    .option('--version <version>', 'export this version label from now on')
    .option('--path <path>', 'export only these page paths from now on (repeatable)', collect)
    .action(async (id: string | undefined, opts: TimingOpts & { domain?: string; version?: string; path?: string[] }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      check(timingProblems(opts, false));
      await updateDocsSchedule(await getClient(), scheduleId, {
        cron: opts.cron,
        every: opts.every,
        timezone: opts.timezone,
        jitter: opts.jitter,
        overlap: opts.overlap,
        version: opts.version,
        paths: opts.path,
      });
      io.stdout.write(`updated ${scheduleId}\n`);
    });

  scheduleSub('list')
    .description("List the schedules of this project's workflows.")
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }) => {
      const views = await listDocsSchedules(await getClient());
      if (opts.json) io.stdout.write(`${JSON.stringify(views)}\n`);
      else if (views.length === 0) io.stdout.write('no schedules\n');
      else for (const view of views) printView(io, view);
    });

  idArgument(scheduleSub('describe').description('Show a schedule: timing, policy, next and recent runs.'))
    .option('--json', 'print one JSON object')
    .action(async (id: string | undefined, opts: { domain?: string; json?: boolean }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      const view = await describeDocsSchedule(await getClient(), scheduleId);
      if (opts.json) io.stdout.write(`${JSON.stringify(view)}\n`);
      else printView(io, view);
    });

  idArgument(scheduleSub('pause').description('Pause a schedule.'))
    .option('--note <text>', 'why')
    .action(async (id: string | undefined, opts: { domain?: string; note?: string }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      await pauseDocsSchedule(await getClient(), scheduleId, opts.note);
      io.stdout.write(`paused ${scheduleId}\n`);
    });

  idArgument(scheduleSub('unpause').description('Unpause a schedule.'))
    .option('--note <text>', 'why')
    .action(async (id: string | undefined, opts: { domain?: string; note?: string }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      await unpauseDocsSchedule(await getClient(), scheduleId, opts.note);
      io.stdout.write(`unpaused ${scheduleId}\n`);
    });

  idArgument(scheduleSub('trigger').description('Run a schedule\'s action now.'))
    .addOption(overlapOption())
    .action(async (id: string | undefined, opts: { domain?: string; overlap?: OverlapName }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      await triggerDocsSchedule(await getClient(), scheduleId, opts.overlap);
      io.stdout.write(`triggered ${scheduleId}\n`);
    });

  idArgument(scheduleSub('backfill').description('Take the actions a schedule would have taken between two times.'))
    .requiredOption('--start <time>', 'ISO-8601 start, e.g. 2026-01-01T00:00:00Z')
    .requiredOption('--end <time>', 'ISO-8601 end')
    .addOption(overlapOption())
    .action(async (id: string | undefined, opts: { domain?: string; start: string; end: string; overlap?: OverlapName }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      const start = new Date(opts.start);
      const end = new Date(opts.end);
      if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime())) throw new InvalidInputError(['--start and --end must be ISO-8601 times']);
      if (end <= start) throw new InvalidInputError(['--end must be after --start']);
      await backfillDocsSchedule(await getClient(), scheduleId, start, end, opts.overlap);
      io.stdout.write(`backfilled ${scheduleId} from ${start.toISOString()} to ${end.toISOString()}\n`);
    });

  idArgument(scheduleSub('delete').description('Delete a schedule (runs it started keep running).'))
    .action(async (id: string | undefined, opts: { domain?: string }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      await deleteDocsSchedule(await getClient(), scheduleId);
      io.stdout.write(`deleted ${scheduleId}\n`);
    });

  return program;
}

/**
 * Runs the CLI on argv (without node and script); resolves with the exit code. Without `connect` it
 * connects from io.env when a command needs Temporal, and closes that connection at the end; a given
 * `connect` (tests, embedding) keeps ownership of its client.
 */
export async function runCli(argv: string[], io: CliIo, connect?: () => Promise<Client>): Promise<number> {
  let owned: Client | undefined;
  const program = buildProgram(
    io,
    connect ??
      (async () => {
        owned = await connectClient(io.env);
        return owned;
      }),
  );
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are "errors" with exit code 0; usage errors were already printed (one line).
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    io.stderr.write(`${errorLine(err)}\n`);
    return exitCodeOf(err);
  } finally {
    await owned?.connection.close();
  }
}

