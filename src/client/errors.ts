// The client library's own error: an input it refuses before starting anything.

/** Thrown before anything is started when an input is invalid. `problems` lists every one. */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** Throws an InvalidInputError listing `problems`, if there are any. */
export function checkInput(problems: string[]): void {
  if (problems.length > 0) throw new InvalidInputError(problems);
}
