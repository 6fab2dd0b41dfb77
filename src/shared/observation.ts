// One poll of a job's status, as the polling policies (src/policies/polling.ts) read it and the
// polling workflows carry it across continue-as-new. Plain JSON.

/** One poll result (the first one is the start/create response when the history is complete). */
export interface Observation {
  atMs: number;
  status: string;
  /** Export jobs only. */
  progress?: number;
  pageCount?: number;
}
