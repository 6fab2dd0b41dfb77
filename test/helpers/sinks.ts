// A worker's sinks file (KEEPER_SINKS_FILE) for a test: JSON, which is YAML.
import * as fsp from 'node:fs/promises';
import path from 'node:path';

/** Writes `sinks` (name -> sink) into `dir`/sinks.json, file and mirror sinks allowed below `allowedDirs`. */
export async function writeSinksFile(
  dir: string,
  sinks: Record<string, Record<string, unknown>>,
  allowedDirs: string[] = [dir],
): Promise<string> {
  const file = path.join(dir, 'sinks.json');
  await fsp.writeFile(file, `${JSON.stringify({ allowedDirs, sinks }, null, 2)}\n`);
  return file;
}

/** A file sink's JSON deployment document's bundleUrl, or undefined while there is none. */
export async function appliedBundleUrl(file: string): Promise<string | undefined> {
  const text = await fsp.readFile(file, 'utf8').catch(() => undefined);
  return text ? (JSON.parse(text) as { staticExport: { bundleUrl: string } }).staticExport.bundleUrl : undefined;
}
