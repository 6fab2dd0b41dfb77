// The static checks `npm test` runs before its tests: typecheck, lint and format, side by side (each
// is mostly one busy core, and they share nothing), and beside the run's set-up (scripts/run-tests.ts
// --checks). Each one's output is held until it ends and then printed whole under its name, so they do
// not interleave. Alone (`tsx scripts/checks.ts`), the exit code is 1 when any of them failed.
import { spawn } from 'node:child_process';

const CHECKS = ['typecheck', 'lint', 'format:check'];

interface Outcome {
  check: string;
  ok: boolean;
  output: string;
  ms: number;
}

function runCheck(check: string): Promise<Outcome> {
  const startedAt = Date.now();
  const child = spawn('npm', ['run', '--silent', check], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => {
    child.once('error', (err) => resolve({ check, ok: false, output: err.message, ms: Date.now() - startedAt }));
    child.once('close', (code) => resolve({ check, ok: code === 0, output, ms: Date.now() - startedAt }));
  });
}

/** Runs every check; true when all passed (each one's result is printed as it ends). */
export async function runChecks(): Promise<boolean> {
  console.log(`npm test: ${CHECKS.join(', ')}, side by side`);
  const outcomes = await Promise.all(
    CHECKS.map((check) =>
      runCheck(check).then((outcome) => {
        const seconds = (outcome.ms / 1000).toFixed(1);
        console.log(`\nnpm run ${check}: ${outcome.ok ? 'passed' : 'FAILED'} (${seconds} s)`);
        if (!outcome.ok || outcome.output.trim()) process.stdout.write(outcome.output.trimEnd() + '\n');
        return outcome;
      }),
    ),
  );
  const failed = outcomes.filter((o) => !o.ok).map((o) => o.check);
  if (failed.length > 0) console.error(`\nnpm test: ${failed.join(', ')} failed: no tests run`);
  return failed.length === 0;
}

if (require.main === module) void runChecks().then((ok) => process.exit(ok ? 0 : 1));
