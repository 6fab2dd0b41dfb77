// `schedule rekey`: every Schedule's payloads re-encrypted with the key that encrypts now, so a key can
// leave the key file without breaking the runs Schedules start later; what is written again and when a
// Schedule is created again instead: docs/security.md, "Rotating a key: staged, so no host meets a key it
// does not hold" (Schedules). This project's Schedules no longer carry a memo (their kind and domain come
// from the action and DocsDomain).
import type { Client } from '@temporalio/client';
import { scheduleIds, scheduleKeyIds } from './key-usage';
import { startsOurs } from './schedules';

export type RekeyOutcome = 'current' | 'rekeyed' | 'recreated' | 'failed';

export interface RekeyResult {
  scheduleId: string;
  outcome: RekeyOutcome;
  /** The key ids the Schedule held before. */
  keyIdsBefore: string[];
  /** Why it failed (one line), for `failed`. */
  problem?: string;
}

async function recreate(client: Client, scheduleId: string): Promise<void> {
  const handle = client.schedule.getHandle(scheduleId);
  const d = await handle.describe();
  await handle.delete();
  try {
    await client.schedule.create({
      scheduleId,
      spec: d.spec,
      action: d.action,
      policies: d.policies,
      state: d.state,
      typedSearchAttributes: d.typedSearchAttributes,
      // Another service's memo is kept (encrypted with the current key); ours is no longer written.
      ...(d.memo && !startsOurs(d.action) ? { memo: d.memo } : {}),
    });
  } catch (err) {
    // Said plainly: the operator must create it again (`schedule create`), nothing else will.
    throw new Error(`deleted to be created again, and the create failed: ${(err as Error).message}`, { cause: err });
  }
}

/** One Schedule brought to `currentKeyId`; a problem is reported, never thrown, so the others go on. */
export async function rekeySchedule(client: Client, scheduleId: string, currentKeyId: string): Promise<RekeyResult> {
  const stale = (ids: Set<string>) => [...ids].some((id) => id !== currentKeyId);
  let keyIdsBefore: string[] = [];
  try {
    const { action, memo } = await scheduleKeyIds(client, scheduleId);
    keyIdsBefore = [...new Set([...action, ...memo])].sort();
    if (stale(memo)) {
      await recreate(client, scheduleId);
      return { scheduleId, outcome: 'recreated', keyIdsBefore };
    }
    // An action without an encrypted payload was written before encryption: written again, encrypted.
    if (action.size === 0 || stale(action)) {
      await client.schedule.getHandle(scheduleId).update((d) => ({
        spec: d.spec,
        action: d.action,
        policies: d.policies,
        state: d.state,
      }));
      return { scheduleId, outcome: 'rekeyed', keyIdsBefore };
    }
    return { scheduleId, outcome: 'current', keyIdsBefore };
  } catch (err) {
    const problem = (err instanceof Error ? err.message : String(err)).replace(/\s*\n\s*/g, ' ');
    return { scheduleId, outcome: 'failed', keyIdsBefore, problem };
  }
}

/** Every Schedule of the client's namespace, one at a time (each result told through onResult). */
export async function rekeySchedules(
  client: Client,
  currentKeyId: string,
  onResult: (result: RekeyResult) => void = () => undefined,
): Promise<RekeyResult[]> {
  const results: RekeyResult[] = [];
  for await (const scheduleId of scheduleIds(client)) {
    const result = await rekeySchedule(client, scheduleId, currentKeyId);
    results.push(result);
    onResult(result);
  }
  return results;
}
