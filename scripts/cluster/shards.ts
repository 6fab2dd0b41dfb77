// The number of history shards: a setting of the cluster's creation. The server persists the count in
// the database at its first start and keeps it for the life of the data (a later config value is
// ignored with a warning), so `npm run cluster -- --history-shards N` is taken only when the database is
// created by that run, and recorded in .data/cluster/history-shards for the nodes started later.
// What it means: a workflow's shard is a hash of its namespace and id, modulo the count; each shard is
// owned by one history service at a time; with several nodes the shards spread over them and move when
// a node is lost. More shards spread finer (and cost each node some memory and database rows);
// a cluster never has more history nodes doing work than shards.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { CLUSTER_FILES } from './layout';

/** deploy/temporal/config.yaml's default (NUM_HISTORY_SHARDS): what a cluster without a record was made with. */
export const DEFAULT_HISTORY_SHARDS = 4;
/** Temporal accepts any positive count; beyond this a laptop's cluster only spends memory. */
export const MAX_HISTORY_SHARDS = 16_384;

/** "--history-shards" value: a whole number from 1 to MAX_HISTORY_SHARDS. */
export function parseHistoryShards(raw: string | undefined): number {
  const value = Number(raw);
  if (!raw || !Number.isInteger(value) || value < 1 || value > MAX_HISTORY_SHARDS)
    throw new RangeError(`--history-shards ${raw ?? ''}: a whole number from 1 to ${MAX_HISTORY_SHARDS}`);
  return value;
}

/** The count this cluster was created with (its record; the config default for one made before the record). */
export function recordedHistoryShards(): number {
  if (!existsSync(CLUSTER_FILES.historyShards)) return DEFAULT_HISTORY_SHARDS;
  return parseHistoryShards(readFileSync(CLUSTER_FILES.historyShards, 'utf8').trim());
}

/**
 * The count node 1 starts with. A cluster being created (`initialized` false) takes `asked` (default 4)
 * and records it; an existing one keeps its count, and asking for another is an error saying how to
 * get one: a new cluster.
 */
export function historyShardsFor(asked: number | undefined, initialized: boolean): number {
  if (!initialized) {
    const count = asked ?? DEFAULT_HISTORY_SHARDS;
    writeFileSync(CLUSTER_FILES.historyShards, `${count}\n`);
    return count;
  }
  const current = recordedHistoryShards();
  if (asked !== undefined && asked !== current)
    throw new Error(
      `--history-shards ${asked}: this cluster was created with ${current} history shards, and the count ` +
        'is fixed at creation (the server keeps the one in its database). For another count make a new ' +
        'cluster: `npm run cluster -- --stop`, remove .data/cluster (all its workflows), then ' +
        `\`npm run cluster -- --history-shards ${asked}\`.`,
    );
  return current;
}
