// `keys in-use [--json] [--limit N]`: which payload key ids open workflows and Schedules still hold
// (src/client/key-usage.ts), beside the keys of PAYLOAD_ENCRYPTION_KEYS_FILE when it is set: a key of
// the file that nothing holds (and that does not encrypt) can be dropped.
import { Command, InvalidArgumentError } from 'commander';
import { type KeyUsageReport, DEFAULT_WORKFLOW_LIMIT, keysInUse } from '../../client/key-usage';
import { type KeyRing, payloadEncryptionFromEnv } from '../../codec';
import type { CliContext } from '../context';
import { jsonLine } from '../format';

const PROGRESS_EVERY_MS = 2_000;

const positiveInt = (text: string): number => {
  if (!/^[1-9]\d*$/.test(text)) throw new InvalidArgumentError('a positive integer');
  return Number(text);
};

/** The keys of the file that nothing holds, the encrypting key excepted; none after a partial scan. */
export function unusedKeys(report: KeyUsageReport, ring: KeyRing): string[] {
  if (!report.complete) return [];
  const held = new Set(report.keys.map((k) => k.keyId));
  return [...ring.byId.keys()].filter((id) => id !== ring.current.id && !held.has(id));
}

function roleOf(keyId: string, ring: KeyRing | undefined): string {
  if (!ring) return '';
  if (ring.current.id === keyId) return 'encrypts';
  if (ring.decryptOnly.has(keyId)) return 'decrypt-only';
  return ring.byId.has(keyId) ? 'decrypts' : 'NOT IN THE KEY FILE';
}

function usageText(report: KeyUsageReport, ring: KeyRing | undefined, unused: string[] | undefined): string {
  const lines = report.keys.map((k) => {
    const role = roleOf(k.keyId, ring);
    return `${k.keyId}${role ? ` (${role})` : ''}: ${k.workflows} open workflows, ${k.schedules} schedules; e.g. ${k.examples.join(', ')}`;
  });
  if (lines.length === 0) lines.push('no encrypted payload in open workflows or schedules');
  lines.push(
    `scanned ${report.workflowsScanned} open workflows and ${report.schedulesScanned} schedules` +
      (report.complete ? '' : ' (stopped at --limit: more open workflows may hold other keys)'),
  );
  if (unused)
    lines.push(unused.length ? `held by nothing, can be dropped: ${unused.join(', ')}` : 'no key can be dropped');
  return `${lines.join('\n')}\n`;
}

function inUseCommand({ io, client, wire }: CliContext): Command {
  return wire(new Command('in-use'))
    .description('List the payload key ids that open workflows and Schedules still hold.')
    .option('--limit <n>', `open workflows to scan at most (default ${DEFAULT_WORKFLOW_LIMIT})`, positiveInt)
    .option('--json', 'print one JSON object')
    .action(async (opts: { limit?: number; json?: boolean }) => {
      let lastAt = 0;
      const report = await keysInUse(await client(), {
        limit: opts.limit,
        onProgress: ({ workflowsScanned, workflowsOpen }) => {
          if (Date.now() - lastAt < PROGRESS_EVERY_MS) return;
          lastAt = Date.now();
          io.stderr.write(`keys in-use: ${workflowsScanned} of ${workflowsOpen} open workflows scanned\n`);
        },
      });
      // The file as it is after the scan (the client read it first: a bad file fails before the scan).
      const ring = payloadEncryptionFromEnv(io.env)?.keyFile.keys();
      const unused = ring ? unusedKeys(report, ring) : undefined;
      io.stdout.write(
        opts.json ? jsonLine({ ...report, ...(unused ? { unused } : {}) }) : usageText(report, ring, unused),
      );
    });
}

export function keysCommand(ctx: CliContext): Command {
  return ctx
    .wire(new Command('keys'))
    .description('Payload encryption keys: which ones the namespace still needs (docs/security.md).')
    .addCommand(inUseCommand(ctx));
}
