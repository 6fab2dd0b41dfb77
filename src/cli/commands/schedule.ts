// `schedule create|update|list|describe|pause|unpause|trigger|backfill|delete`: Temporal Schedules
// that start exports or ensure keepers on a timetable.
import { Command, Option } from 'commander';
import { checkInput, InvalidInputError } from '../../client';
import {
  OVERLAP_POLICIES,
  createDocsSchedule,
  listDocsSchedules,
  resolveScheduleId,
  timingProblems,
  toOverlapPolicy,
  updateDocsSchedule,
  viewOf,
  type OverlapName,
  type ScheduleTarget,
  type ScheduleTiming,
} from '../../client/schedules';
import { rekeySchedules } from '../../client/schedule-rekey';
import { KEYS_FILE_VAR, payloadEncryptionFromEnv } from '../../codec';
import { taskQueueOf } from '../../connection/settings';
import { exportInputProblems } from '../../policies/validation/export';
import { collect, type CliContext } from '../context';
import { jsonLine, rekeyText, scheduleText } from '../format';
import { exportInputFrom } from './export';
import { addSinkOptions, keeperInputFrom, type SinkOpts } from './keeper';

type TimingOpts = ScheduleTiming & { overlap?: OverlapName };

type CreateOpts = TimingOpts &
  SinkOpts & {
    domain: string;
    id?: string;
    action: 'export' | 'keep';
    path?: string[];
    paused?: boolean;
    note?: string;
    json?: boolean;
  };

const overlapOption = (dflt?: string) => {
  const option = new Option('--overlap <policy>', 'what to do when the previous run is still going').choices(
    OVERLAP_POLICIES as unknown as string[],
  );
  return dflt ? option.default(dflt) : option;
};

const idArgument = (cmd: Command) =>
  cmd
    .argument('[scheduleId]', 'schedule id (default export:<domain> with --domain)')
    .option('--domain <domain>', 'the domain (schedule id export:<domain>)');

const timingOptions = (cmd: Command) =>
  cmd
    .option('--cron <expr>', 'cron expression, e.g. "0 3 * * *" (repeatable)', collect)
    .option('--every <duration>', 'interval such as 1h, 30m, 1d (repeatable)', collect)
    .option('--timezone <tz>', 'IANA time zone for --cron (default UTC)')
    .option('--jitter <duration>', 'random delay added to each run, e.g. 30s');

function createCommand({ io, client, wire }: CliContext): Command {
  return addSinkOptions(
    timingOptions(
      wire(new Command('create'))
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
    .action(async (opts: CreateOpts) => {
      const target: ScheduleTarget =
        opts.action === 'keep'
          ? { kind: 'keeper', input: keeperInputFrom(opts.domain, opts) }
          : { kind: 'export', input: exportInputFrom(opts) };
      checkInput([...(target.kind === 'export' ? exportInputProblems(target.input) : []), ...timingProblems(opts)]);
      const handle = await createDocsSchedule(await client(), target, {
        ...opts,
        scheduleId: opts.id,
        // The CLI's environment, which is not always the process's (runCli in process).
        taskQueue: taskQueueOf(undefined, io.env),
      });
      io.stdout.write(opts.json ? jsonLine({ scheduleId: handle.scheduleId }) : `${handle.scheduleId}\n`);
    });
}

function updateCommand({ io, client, wire }: CliContext): Command {
  return timingOptions(
    idArgument(
      wire(new Command('update')).description("Change a schedule's timing, overlap policy, or export version/paths."),
    ),
  )
    .addOption(overlapOption())
    .option('--version <version>', 'export this version label from now on')
    .option('--path <path>', 'export only these page paths from now on (repeatable)', collect)
    .action(
      async (id: string | undefined, opts: TimingOpts & { domain?: string; version?: string; path?: string[] }) => {
        const scheduleId = resolveScheduleId(id, opts.domain);
        checkInput(timingProblems(opts, false));
        await updateDocsSchedule(await client(), scheduleId, { ...opts, paths: opts.path });
        io.stdout.write(`updated ${scheduleId}\n`);
      },
    );
}

function listCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('list'))
    .description("List the schedules of this project's workflows.")
    .option('--json', 'print one JSON array')
    .action(async (opts: { json?: boolean }) => {
      const views = await listDocsSchedules(await client());
      if (opts.json) io.stdout.write(jsonLine(views));
      else if (views.length === 0) io.stdout.write('no schedules\n');
      else for (const view of views) io.stdout.write(scheduleText(view));
    });
}

function describeCommand({ io, client, wire }: CliContext): Command {
  return idArgument(wire(new Command('describe')).description('Show a schedule: timing, policy, next and recent runs.'))
    .option('--json', 'print one JSON object')
    .action(async (id: string | undefined, opts: { domain?: string; json?: boolean }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      const view = viewOf(await (await client()).schedule.getHandle(scheduleId).describe());
      io.stdout.write(opts.json ? jsonLine(view) : scheduleText(view));
    });
}

/** pause and unpause: the same shape, a different call and word. */
function pauseCommand({ io, client, wire }: CliContext, pause: boolean): Command {
  const name = pause ? 'pause' : 'unpause';
  return idArgument(wire(new Command(name)).description(pause ? 'Pause a schedule.' : 'Unpause a schedule.'))
    .option('--note <text>', 'why')
    .action(async (id: string | undefined, opts: { domain?: string; note?: string }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      const handle = (await client()).schedule.getHandle(scheduleId);
      const note = opts.note ?? `${name}d from the docs-admin CLI`;
      await (pause ? handle.pause(note) : handle.unpause(note));
      io.stdout.write(`${name}d ${scheduleId}\n`);
    });
}

function triggerCommand({ io, client, wire }: CliContext): Command {
  return idArgument(wire(new Command('trigger')).description("Run a schedule's action now."))
    .addOption(overlapOption())
    .action(async (id: string | undefined, opts: { domain?: string; overlap?: OverlapName }) => {
      const scheduleId = resolveScheduleId(id, opts.domain);
      const overlap = opts.overlap && toOverlapPolicy(opts.overlap);
      await (await client()).schedule.getHandle(scheduleId).trigger(overlap);
      io.stdout.write(`triggered ${scheduleId}\n`);
    });
}

function backfillCommand({ io, client, wire }: CliContext): Command {
  return idArgument(
    wire(new Command('backfill')).description('Take the actions a schedule would have taken between two times.'),
  )
    .requiredOption('--start <time>', 'ISO-8601 start, e.g. 2026-01-01T00:00:00Z')
    .requiredOption('--end <time>', 'ISO-8601 end')
    .addOption(overlapOption())
    .action(
      async (id: string | undefined, opts: { domain?: string; start: string; end: string; overlap?: OverlapName }) => {
        const scheduleId = resolveScheduleId(id, opts.domain);
        const start = new Date(opts.start);
        const end = new Date(opts.end);
        if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()))
          throw new InvalidInputError(['--start and --end must be ISO-8601 times']);
        if (end <= start) throw new InvalidInputError(['--end must be after --start']);
        const overlap = opts.overlap && toOverlapPolicy(opts.overlap);
        await (await client()).schedule.getHandle(scheduleId).backfill({ start, end, ...(overlap ? { overlap } : {}) });
        io.stdout.write(`backfilled ${scheduleId} from ${start.toISOString()} to ${end.toISOString()}\n`);
      },
    );
}

function deleteCommand({ io, client, wire }: CliContext): Command {
  return idArgument(
    wire(new Command('delete')).description('Delete a schedule (runs it started keep running).'),
  ).action(async (id: string | undefined, opts: { domain?: string }) => {
    const scheduleId = resolveScheduleId(id, opts.domain);
    await (await client()).schedule.getHandle(scheduleId).delete();
    io.stdout.write(`deleted ${scheduleId}\n`);
  });
}

function rekeyCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('rekey'))
    .description("Re-encrypt every Schedule's action with the key that encrypts now, so an old key can be dropped.")
    .option('--json', 'print one JSON object')
    .action(async (opts: { json?: boolean }) => {
      const encryption = payloadEncryptionFromEnv(io.env);
      if (!encryption)
        throw new InvalidInputError([`${KEYS_FILE_VAR} is not set: rekey encrypts with the key file's encrypting key`]);
      const currentKeyId = encryption.keyFile.keys().current.id;
      const results = await rekeySchedules(await client(), currentKeyId, (result) => {
        if (!opts.json) io.stdout.write(rekeyText(result));
      });
      if (opts.json) io.stdout.write(jsonLine({ currentKeyId, schedules: results }));
      const failed = results.filter((r) => r.outcome === 'failed');
      if (failed.length > 0)
        throw new Error(
          `${failed.length} of ${results.length} schedules not rekeyed: ${failed.map((r) => r.scheduleId).join(', ')}`,
        );
    });
}

export function scheduleCommand(ctx: CliContext): Command {
  return ctx
    .wire(new Command('schedule'))
    .description('Manage Temporal Schedules for exports and keepers.')
    .addCommand(createCommand(ctx))
    .addCommand(updateCommand(ctx))
    .addCommand(listCommand(ctx))
    .addCommand(describeCommand(ctx))
    .addCommand(pauseCommand(ctx, true))
    .addCommand(pauseCommand(ctx, false))
    .addCommand(triggerCommand(ctx))
    .addCommand(backfillCommand(ctx))
    .addCommand(deleteCommand(ctx))
    .addCommand(rekeyCommand(ctx));
}
