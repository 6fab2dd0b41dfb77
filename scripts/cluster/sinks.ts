// The cluster's KEEPER_SINKS_FILE: deploy/sinks.yaml's two sinks, written below .data/cluster/deployments
// (made on first run, then left to the operator to edit; the worker reads it again when it changes).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { CLUSTER_FILES } from './layout';

/** The sinks file a cluster's workers use, with its deployments directory; created when missing. */
export function ensureClusterSinks(log: (line: string) => void): string {
  const file = CLUSTER_FILES.sinks;
  const dir = CLUSTER_FILES.deployments;
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const sinks = {
      allowedDirs: [dir],
      sinks: {
        'local-config': { type: 'file', path: path.join(dir, 'config', 'staticExport.json') },
        'local-mirror': { type: 'mirror', dir: path.join(dir, 'mirror'), urlPrefix: 'http://127.0.0.1:8088/bundles' },
      },
    };
    writeFileSync(
      file,
      `# KEEPER_SINKS_FILE of this cluster's workers (deploy/sinks.yaml explains each kind)\n${stringify(sinks)}`,
      {
        flag: 'wx',
      },
    );
    log(`keeper sinks: created ${file}`);
  }
  return file;
}
