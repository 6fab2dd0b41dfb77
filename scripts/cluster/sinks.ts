// The cluster's KEEPER_SINKS_FILE: deploy/sinks.yaml's two sinks, written below .data/cluster/deployments
// (made on first run, then left to the operator to edit; the worker reads it again when it changes).
// Each sink serves the domains it lists: the README's examples (docs.example.com through the file sink,
// docs.internal through the mirror). A file an earlier release made, unedited, gets them added.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { parseSinksFile } from '../../src/activities/sinks-file';
import { CLUSTER_FILES } from './layout';

const HEADER = "# KEEPER_SINKS_FILE of this cluster's workers (deploy/sinks.yaml explains each kind)\n";

/** The sinks file's content: a file sink and a mirror sink, both below `dir`, each with the domains it serves. */
function clusterSinks(dir: string) {
  return {
    allowedDirs: [dir],
    sinks: {
      'local-config': {
        type: 'file',
        path: path.join(dir, 'config', 'staticExport.json'),
        domains: ['docs.example.com'] as string[] | undefined,
      },
      'local-mirror': {
        type: 'mirror',
        dir: path.join(dir, 'mirror'),
        urlPrefix: 'http://127.0.0.1:8088/bundles',
        domains: ['docs.internal'] as string[] | undefined,
      },
    },
  };
}

/** The sinks file's text. */
export function clusterSinksText(dir: string): string {
  return `${HEADER}${stringify(clusterSinks(dir))}`;
}

/** The text releases before `domains:` wrote: a file still holding it was never edited. */
function textBeforeDomains(dir: string): string {
  const sinks = clusterSinks(dir);
  for (const sink of Object.values(sinks.sinks)) delete sink.domains;
  return `${HEADER}${stringify(sinks)}`;
}

/**
 * The sinks file a cluster's workers use, with its deployments directory: created when missing; an
 * unedited one of an earlier release gets its domains; an edited one without them is named, not changed.
 */
export function ensureClusterSinks(
  log: (line: string) => void,
  { file, dir }: { file: string; dir: string } = { file: CLUSTER_FILES.sinks, dir: CLUSTER_FILES.deployments },
): string {
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(file, clusterSinksText(dir), { flag: 'wx' });
    log(`keeper sinks: created ${file}`);
    return file;
  }
  const text = readFileSync(file, 'utf8');
  if (text === textBeforeDomains(dir)) {
    writeFileSync(file, clusterSinksText(dir));
    log(
      `keeper sinks: added the domains each sink serves to ${file} (local-config: docs.example.com, local-mirror: docs.internal)`,
    );
    return file;
  }
  const lacking = sinksWithoutDomains(text, file);
  if (lacking.length > 0)
    log(
      `keeper sinks: ${file}: ${lacking.join(', ')} list no domains: the workers refuse them until each has "domains: [<hostname>, ...]" (docs/operations.md)`,
    );
  return file;
}

/** The sinks of a file that list no domains (none when it cannot be read: the worker says why at start). */
function sinksWithoutDomains(text: string, file: string): string[] {
  try {
    return [...parseSinksFile(text, file).invalid]
      .filter(([, why]) => why.startsWith('it lists no domains'))
      .map(([n]) => n);
  } catch {
    return [];
  }
}
