// `export`: start a static export, or run it to the end with --wait (progress on stderr).
import { Command } from 'commander';
import { awaitExport, checkInput, startExport } from '../../client';
import { exportInputProblems, normalizeExportInput } from '../../policies/validation/export';
import type { ExportStatus, StaticExportInput } from '../../shared/static-export';
import { collect, type CliContext, type StartCommandOpts } from '../context';
import { exportResultText, jsonLine, type ExportOutput } from '../format';
import { exportReporter, waitReporting } from '../progress';

interface ExportOpts extends StartCommandOpts {
  domain: string;
  version?: string;
  path?: string[];
}

/** The export input the options describe (also what `schedule create` exports). */
export function exportInputFrom(opts: { domain: string; version?: string; path?: string[] }): StaticExportInput {
  const input: StaticExportInput = { domain: opts.domain };
  if (opts.version !== undefined) input.version = opts.version;
  if (opts.path !== undefined) input.paths = opts.path;
  return input;
}

export function exportCommand(ctx: CliContext): Command {
  return ctx
    .wire(new Command('export'))
    .description('Export a docs site: start, poll until done, generate the bundle link.')
    .requiredOption('--domain <domain>', 'bare hostname of the docs site, e.g. docs.example.com')
    .option('--version <version>', 'version label to export (default: the latest published)')
    .option('--path <path>', 'export only this page path (repeatable)', collect)
    .option('--request-id <id>', 'idempotency key: the same id attaches to the same export')
    .option('--wait', 'wait for the result, showing progress on stderr')
    .option('--json', 'print JSON (with --wait, the last stdout line is the result object)')
    .action((opts: ExportOpts) => runExportCommand(ctx, opts));
}

async function runExportCommand({ io, client }: CliContext, opts: ExportOpts): Promise<void> {
  const input = exportInputFrom(opts);
  checkInput(exportInputProblems(input));
  const c = await client();
  const handle = await startExport(c, normalizeExportInput(input), { requestId: opts.requestId });
  if (!opts.wait) {
    io.stdout.write(opts.json ? jsonLine({ workflowId: handle.workflowId }) : `${handle.workflowId}\n`);
    return;
  }
  io.stderr.write(`started ${handle.workflowId}\n`);
  const { workflowId, jobId, domain, pageCount, bundleUrl, expiresAt, sizeBytes } = await waitReporting(
    exportReporter(io.stderr, input.domain),
    (progress) => awaitExport(c, handle.workflowId, progress),
    (result): ExportStatus => ({
      phase: 'done',
      jobId: result.jobId,
      status: 'completed',
      progress: 100,
      pageCount: result.pageCount,
      polls: 0,
      lastPollAt: null,
      nextPollAt: null,
    }),
  );
  const out: ExportOutput = { workflowId, jobId, domain, pageCount, bundleUrl, expiresAt, sizeBytes };
  io.stdout.write(opts.json ? jsonLine(out) : exportResultText(out));
}
