// A tiny in-memory ustar writer + gzip: enough for the emulator to serve real .tar.gz bundles that
// `tar -tzf` and the `tar` package list and extract.
import { gzipSync } from 'node:zlib';

export interface TarEntry {
  name: string;
  content: Buffer | string;
  mtimeMs?: number;
}

const BLOCK = 512;

function writeString(header: Buffer, offset: number, length: number, value: string): void {
  header.write(value.slice(0, length), offset, length, 'utf8');
}

function writeOctal(header: Buffer, offset: number, length: number, value: number): void {
  // length-1 octal digits, NUL-terminated
  writeString(header, offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
}

function splitName(name: string): { name: string; prefix: string } {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: '' };
  const cut = name.lastIndexOf('/', 155);
  if (cut > 0 && Buffer.byteLength(name.slice(cut + 1)) <= 100)
    return { prefix: name.slice(0, cut), name: name.slice(cut + 1) };
  throw new Error(`tar entry name too long: ${name.slice(0, 40)}...`);
}

function header(entry: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  const { name, prefix } = splitName(entry.name);
  writeString(h, 0, 100, name);
  writeOctal(h, 100, 8, 0o644); // mode
  writeOctal(h, 108, 8, 0); // uid
  writeOctal(h, 116, 8, 0); // gid
  writeOctal(h, 124, 12, size);
  writeOctal(h, 136, 12, Math.floor((entry.mtimeMs ?? 0) / 1000));
  h.fill(0x20, 148, 156); // checksum placeholder: spaces
  h.write('0', 156, 1, 'latin1'); // regular file
  writeString(h, 257, 6, 'ustar\0');
  writeString(h, 263, 2, '00');
  writeString(h, 345, 155, prefix);
  let sum = 0;
  for (const byte of h) sum += byte;
  writeString(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

/** Builds a ustar archive of `entries` and gzips it. */
export function tarGz(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const content = typeof entry.content === 'string' ? Buffer.from(entry.content, 'utf8') : entry.content;
    parts.push(header(entry, content.length), content);
    const pad = (BLOCK - (content.length % BLOCK)) % BLOCK;
    if (pad) parts.push(Buffer.alloc(pad, 0));
  }
  parts.push(Buffer.alloc(BLOCK * 2, 0));
  return gzipSync(Buffer.concat(parts));
}
