// `keygen`: a new line for PAYLOAD_ENCRYPTION_KEYS_FILE (docs/security.md: put it on top to rotate).
import { Command } from 'commander';
import { generateKeyLine } from '../../codec';
import type { CliContext } from '../context';

export function keygenCommand({ io, wire }: CliContext): Command {
  return wire(new Command('keygen'))
    .description(
      'Print a new payload encryption key line "<keyId> <base64 of 32 random bytes>" for PAYLOAD_ENCRYPTION_KEYS_FILE (the first line encrypts).',
    )
    .action(() => {
      io.stdout.write(`${generateKeyLine()}\n`);
    });
}
