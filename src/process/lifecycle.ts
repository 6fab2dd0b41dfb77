// The process lifecycle of the small servers (codec server, webhook receiver, OpenID provider): a failed
// start is one line on stderr and exit code 1; SIGTERM or SIGINT runs the stop steps in order and exits 0.

/** Runs `main` when the module is the entry point; its failure ends the process with one line naming `name`. */
export function runAsEntryPoint(name: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    console.error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}

/** On SIGTERM or SIGINT: each step in turn (a server's close, then its clients'), then exit 0. */
export function stopOnSignal(...steps: (() => Promise<unknown>)[]): void {
  const stop = () =>
    void steps.reduce<Promise<unknown>>((done, step) => done.then(step), Promise.resolve()).then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
