// One poll of a job's status, as the polling policies (src/policies/polling.ts) read it and the
// polling workflows carry it across continue-as-new. Plain JSON.
import { listOf, optional, record, text, time, type Shaped } from './shapes';

/** One poll result (the first one is the start/create response when the history is complete). */
const observation = record({
  atMs: time,
  status: text,
  /** Export jobs only. */
  progress: optional(time),
  pageCount: optional(time),
});
export type Observation = Shaped<typeof observation>;

/** Polling carries at most 20 observations (recentObservations); room for older releases. */
export const observations = listOf(observation, 1000);
