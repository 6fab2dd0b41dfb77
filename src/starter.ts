// `npm run cli -- <command>` and `npx docs-admin <command>`: the docs-admin CLI (and runCli for
// embedding); the code is in src/cli/.
import { EXIT_FAILURE, errorLine, runCli } from './cli/program';

export * from './cli/program';

/** Runs the CLI on this process's arguments and environment; the exit code becomes the process's. */
export function main(): void {
  runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`${errorLine(err)}\n`);
      process.exitCode = EXIT_FAILURE;
    },
  );
}

if (require.main === module) main();
