// The cluster's KEEPER_SINKS_FILE: deploy/sinks.yaml's two sinks, written below .data/cluster/deployments
// (made on first run, then left to the operator to edit; the worker reads it again when it changes).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { CLUSTER_FILES } from './layout';

/** The sinks file's text: a file sink and a mirror sink, both below `dir`. */
export function clusterSinksText(dir: string): string {
  const sinks = {
    allowedDirs: [dir],
    sinks: {
      'local-config': { type: 'file', path: path.join(dir, 'config', 'staticExport.json') },
      'local-mirror': { type: 'mirror', dir: path.join(dir, 'mirror'), urlPrefix: 'http://127.0.0.1:8088/bundles' },
    },
  };
  return `# KEEPER_SINKS_FILE of this cluster's workers (deploy/sinks.yaml explains each kind)\n${stringify(sinks)}`;
}

/** The sinks file a cluster's workers use, with its deployments directory; created when missing. */
export function ensureClusterSinks(log: (line: string) => void): string {
  const file = CLUSTER_FILES.sinks;
  if (!existsSync(file)) {
    mkdirSync(CLUSTER_FILES.deployments, { recursive: true, mode: 0o700 });
    writeFileSync(file, clusterSinksText(CLUSTER_FILES.deployments), { flag: 'wx' });
    log(`keeper sinks: created ${file}`);
  }
  return file;
}
