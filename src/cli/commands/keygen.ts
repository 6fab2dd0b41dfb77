// `keygen`: payload keys and codec server tokens. Without options it prints a new key line; with
// --add / --promote / --drop it edits the key file (PAYLOAD_ENCRYPTION_KEYS_FILE, or --file) for a staged
// rotation (docs/security.md): add everywhere as decrypt-only, promote, drop once `keys in-use` allows.
import { existsSync, readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import {
  KEYS_FILE_VAR,
  TOKEN_FILE_VAR,
  addKey,
  dropKey,
  generateKeyLine,
  generateToken,
  parseKeyFile,
  parseTokenFile,
  promoteKey,
} from '../../codec';
import { replaceSecretFile } from '../../config/secret-file';
import { InvalidInputError } from '../../client/errors';
import type { CliContext } from '../context';

interface KeygenOpts {
  file?: string;
  add?: boolean;
  promote?: string;
  drop?: string;
  token?: boolean;
}

const readIfThere = (file: string): string => (existsSync(file) ? readFileSync(file, 'utf8') : '');

/** One new token as a line of `file` (created 0600); the tokens already there stay valid. */
function addToken(file: string): string {
  const text = readIfThere(file);
  const next = `${text.replace(/\n*$/, text ? '\n' : '')}${generateToken()}\n`;
  const count = parseTokenFile(next, file).length;
  replaceSecretFile(file, next);
  return `added a token to ${file} (${count} accepted)`;
}

/** The key file edited as asked; returns what to print. */
function editKeys(file: string, opts: KeygenOpts): string {
  if (opts.add) {
    const line = generateKeyLine();
    const text = readIfThere(file);
    const next = addKey(text, line, file);
    replaceSecretFile(file, next);
    const id = line.split(' ')[0] as string;
    return parseKeyFile(next, file).current.id === id
      ? `${id}: created ${file}; it encrypts`
      : `${id}: added to ${file} as decrypt-only; promote it once every host has it: keygen --promote ${id}`;
  }
  const text = readFileSync(file, 'utf8');
  if (opts.promote !== undefined) {
    replaceSecretFile(file, promoteKey(text, opts.promote, file));
    return `${opts.promote}: encrypts from now on (${file}); the keys before it still decrypt`;
  }
  const id = opts.drop as string;
  replaceSecretFile(file, dropKey(text, id, file));
  return `${id}: dropped from ${file}`;
}

export function keygenCommand({ io, wire }: CliContext): Command {
  return wire(new Command('keygen'))
    .description(
      'Print a new payload key line "<keyId> <base64 of 32 random bytes>", or edit the key file for a staged rotation.',
    )
    .option('--file <path>', `the key file (default ${KEYS_FILE_VAR}); with --token, a token file`)
    .addOption(new Option('--add', 'add a new key to the file, decrypt-only (or the encrypting key of a new file)'))
    .addOption(new Option('--promote <keyId>', 'make this key of the file the one that encrypts'))
    .addOption(new Option('--drop <keyId>', 'remove this key from the file (not the encrypting one)'))
    .addOption(
      new Option('--token', `a codec server token: printed, or with --file added as a line (${TOKEN_FILE_VAR})`),
    )
    .action((opts: KeygenOpts) => {
      const actions = [opts.add, opts.promote, opts.drop, opts.token].filter((a) => a !== undefined);
      if (actions.length > 1) throw new InvalidInputError(['give one of --add, --promote, --drop, --token']);
      if (opts.token) {
        io.stdout.write(`${opts.file ? addToken(opts.file) : generateToken()}\n`);
        return;
      }
      if (actions.length === 0) {
        if (opts.file) throw new InvalidInputError(['--file goes with --add, --promote, --drop or --token']);
        io.stdout.write(`${generateKeyLine()}\n`);
        return;
      }
      const file = opts.file ?? io.env[KEYS_FILE_VAR];
      if (!file) throw new InvalidInputError([`give --file or set ${KEYS_FILE_VAR}`]);
      io.stdout.write(`${editKeys(file, opts)}\n`);
    });
}
