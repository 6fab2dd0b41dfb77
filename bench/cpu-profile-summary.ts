// Summarises V8 .cpuprofile files (from `node --cpu-prof`, one per thread) by self time: per module
// (an npm package, a file of this repository, the workflow bundle, a Node built-in, GC) and the top
// functions. Used to see where a worker's CPU goes in the throughput benchmark:
//
//   BENCH_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=bench/results/tmp/prof" npm run bench -- --only throughput
//   npx tsx bench/cpu-profile-summary.ts bench/results/tmp/prof/CPU.*.<pid>.*.cpuprofile [--top N] [--skip-s S]
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const ROOT = path.resolve(__dirname, '..');

/** Where a frame's code lives: package, repository file, workflow bundle, Node built-in or V8 pseudo-frame. */
export function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const file = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg) return pkg[1]!;
  if (file.startsWith('node:')) return 'node:' + (file.slice(5).split('/')[0] ?? '');
  if (file.startsWith(ROOT)) return path.relative(ROOT, file);
  if (/workflow|webpack/i.test(file)) return `(workflow bundle) ${file.split('/').slice(-2).join('/')}`;
  return file;
}

/** Self milliseconds per node id, of the samples taken at or after fromUs (the profiles' clock, µs). */
function selfTimes(profile: CpuProfile, fromUs: number): Map<number, number> {
  const self = new Map<number, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= fromUs) self.set(id, (self.get(id) ?? 0) + delta / 1000);
  });
  return self;
}

/** `skipS`: leave out the first seconds after the earliest profile started (the worker's start-up, bundling). */
export function summarise(files: string[], top: number, skipS = 0): string {
  const byModule = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const lines: string[] = [];
  let total = 0;
  const profiles = files.map((file) => ({ file, profile: JSON.parse(readFileSync(file, 'utf8')) as CpuProfile }));
  const fromUs = Math.min(...profiles.map((p) => p.profile.startTime)) + skipS * 1e6;
  for (const { file, profile } of profiles) {
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    let fileTotal = 0;
    for (const [id, ms] of selfTimes(profile, fromUs)) {
      const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
      if (functionName === '(idle)') continue;
      const mod = moduleOf(url, functionName);
      byModule.set(mod, (byModule.get(mod) ?? 0) + ms);
      const fn = `${functionName || '(anonymous)'} ${mod}:${lineNumber + 1}`;
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
      fileTotal += ms;
    }
    total += fileTotal;
    lines.push(`${path.basename(file)}: ${(fileTotal / 1000).toFixed(2)} s busy`);
  }
  const table = (title: string, m: Map<string, number>) => [
    '',
    title,
    ...[...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(
        ([k, ms]) => `${(ms / 1000).toFixed(2).padStart(8)} s ${((100 * ms) / total).toFixed(1).padStart(5)} %  ${k}`,
      ),
  ];
  return [
    ...lines,
    `total busy (all threads, no idle): ${(total / 1000).toFixed(2)} s`,
    ...table('self time by module:', byModule),
    ...table('self time by function:', byFunction),
  ].join('\n');
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 30;
  const skipAt = args.indexOf('--skip-s');
  const skipS = skipAt >= 0 ? Number(args.splice(skipAt, 2)[1]) : 0;
  process.stdout.write(`${summarise(args, top, skipS)}\n`);
}
