// Plain-JSON shapes written once: each is the check a value of untrusted JSON must pass (carried state,
// src/policies/validation/carry.ts) and, through Shaped<>, the TypeScript type of what passes. The
// contracts declare their carries with these, so the type and its check cannot drift apart. Pure and
// sandbox-safe.

/** Checks one value at a path (`carry.pending.bundle`); returns what is wrong, naming the path, never the value. */
export type Shape<T> = ((value: unknown, at: string) => string[]) & { readonly admits?: T };
/** The type a shape admits; a field whose shape admits undefined is optional. */
export type Shaped<S> = S extends Shape<infer T> ? T : never;
type Fields<F> = Flat<
  { [K in keyof F as undefined extends Shaped<F[K]> ? never : K]: Shaped<F[K]> } & {
    [K in keyof F as undefined extends Shaped<F[K]> ? K : never]?: Shaped<F[K]>;
  }
>;
type Flat<T> = { [K in keyof T]: T[K] };

/** Temporal's default limit on workflow ids; ids from the API and request keys fit well within it. */
const MAX_ID_LENGTH = 1000;

/** A JSON object (not null, not a list). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const must = (at: string, what: string): string[] => [`${at} must be ${what}`];

export const text: Shape<string> = (v, at) => (typeof v === 'string' ? [] : must(at, 'a string'));
export const id: Shape<string> = (v, at) =>
  typeof v === 'string' && v.trim() !== '' && v.length <= MAX_ID_LENGTH
    ? []
    : must(at, `a non-empty string of at most ${MAX_ID_LENGTH} characters`);
/** A link something will fetch: http(s) only. */
export const link: Shape<string> = (v, at) =>
  typeof v === 'string' && /^https?:\/\/[^\s/?#]+/i.test(v) ? [] : must(at, 'an http(s) URL');
/** Epoch or workflow-time milliseconds (fractions happen: a refresh time is a fraction of a lifetime). */
export const time: Shape<number> = (v, at) =>
  typeof v === 'number' && Number.isFinite(v) ? [] : must(at, 'a finite number');
export const count: Shape<number> = (v, at) =>
  typeof v === 'number' && Number.isInteger(v) && v >= 0 ? [] : must(at, 'a whole number >= 0');
export const flag: Shape<boolean> = (v, at) => (typeof v === 'boolean' ? [] : must(at, 'true or false'));
export const matching =
  (form: RegExp, what: string): Shape<string> =>
  (v, at) =>
    typeof v === 'string' && form.test(v) ? [] : must(at, what);
export const nullable =
  <T>(shape: Shape<T>): Shape<T | null> =>
  (v, at) =>
    v === null ? [] : shape(v, at);
/** Fields a release added after values without them were written. */
export const optional =
  <T>(shape: Shape<T>): Shape<T | undefined> =>
  (v, at) =>
    v === undefined ? [] : shape(v, at);
export const listOf =
  <T>(shape: Shape<T>, max = Number.POSITIVE_INFINITY): Shape<T[]> =>
  (v, at) =>
    Array.isArray(v) && v.length <= max
      ? v.flatMap((item, i) => shape(item, `${at}[${i}]`))
      : must(at, Number.isFinite(max) ? `a list of at most ${max}` : 'a list');
export const oneOf =
  <const V extends readonly string[]>(values: V): Shape<V[number]> =>
  (v, at) =>
    typeof v === 'string' && values.includes(v) ? [] : must(at, `one of ${values.join(', ')}`);
/** An object with these fields; others (written by a later release) are ignored, as the workflows do. */
export const record =
  <F extends Record<string, Shape<unknown>>>(fields: F): Shape<Fields<F>> =>
  (v, at) =>
    isRecord(v)
      ? Object.entries(fields).flatMap(([name, shape]) => shape(v[name], `${at}.${name}`))
      : must(at, 'an object');
/** One of several object shapes, told apart by their `state`. */
export const variants =
  <V extends Record<string, Record<string, Shape<unknown>>>>(
    shapes: V,
  ): Shape<{ [S in keyof V]: Flat<{ state: S } & Fields<V[S]>> }[keyof V]> =>
  (v, at) => {
    const state = isRecord(v) ? v.state : undefined;
    if (typeof state !== 'string' || !Object.hasOwn(shapes, state))
      return must(`${at}.state`, `one of ${Object.keys(shapes).join(', ')}`);
    return record(shapes[state]!)(v, at);
  };
