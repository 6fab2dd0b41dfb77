// Which test files may run side by side. Each file says so in its first line:
//   // test-lane: parallel   it shares nothing with other files: its own servers on free ports, or the
//                           shared cluster with task queues, ids and projects of its own
//   // test-lane: alone      it changes what other files use (restarts or reconfigures the shared
//                           cluster, SIGKILLs a node of it) or measures what a busy machine would skew
// A file without the marker runs alone: a new file is safe until someone says otherwise.
import { readFileSync } from 'node:fs';

export type Lane = 'parallel' | 'alone';

const MARKER = /^\/\/ test-lane: (parallel|alone)\b/;

export function laneOf(firstLine: string): Lane {
  return MARKER.exec(firstLine)?.[1] === 'parallel' ? 'parallel' : 'alone';
}

function firstLineOf(file: string): string {
  return readFileSync(file, 'utf8').split('\n', 1)[0] ?? '';
}

/**
 * The files of each lane. The parallel ones longest first by `previousMs` (the last whole run's file
 * times; new files first, their time unknown), so a long file does not start last and end the lane alone.
 */
export function planLanes(
  files: string[],
  previousMs: ReadonlyMap<string, number> = new Map(),
  readFirstLine: (file: string) => string = firstLineOf,
): Record<Lane, string[]> {
  const lanes: Record<Lane, string[]> = { parallel: [], alone: [] };
  for (const file of files) lanes[laneOf(readFirstLine(file))].push(file);
  const ms = (file: string) => previousMs.get(file) ?? Infinity;
  lanes.parallel.sort((a, b) => ms(b) - ms(a));
  return lanes;
}

export interface FileTime {
  file: string;
  ms: number;
}

/**
 * Each file's time from the lines of scripts/test-timings.mjs (`start|end\t<epoch ms>\t<file>`), from
 * its process's start to its exit, slowest first. A file with no end line was killed (its timeout, or
 * an interrupted run): it counts until `endedAt`, the end of its lane.
 */
export function fileTimes(lines: string[], endedAt: number): FileTime[] {
  const spans = new Map<string, { from: number; to?: number }>();
  for (const line of lines) {
    const [what, at, file] = line.split('\t');
    if (!file || (what !== 'start' && what !== 'end')) continue;
    const span = spans.get(file);
    if (what === 'start') spans.set(file, { from: Number(at), to: span?.to });
    else if (span) span.to = Number(at);
  }
  return [...spans]
    .map(([file, { from, to }]) => ({ file, ms: (to ?? Math.max(endedAt, from)) - from }))
    .sort((a, b) => b.ms - a.ms);
}
