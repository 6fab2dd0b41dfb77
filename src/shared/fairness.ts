// The task-queue fairness key of a project's agent work (agentJob's workflow and activity tasks).

/**
 * Task-queue fairness key of a project's agent workflows and activities (the server allows 64 bytes):
 * the project id, or for a longer one a prefix and a hash of the whole id. With fairness enabled on the
 * server, one project's burst does not hold another project's tasks behind it.
 */
export function projectFairnessKey(projectId: string): string {
  if (projectId.length <= 64 && !/[^\x20-\x7e]/.test(projectId)) return projectId;
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < projectId.length; i++) {
    const c = projectId.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
  }
  const prefix = projectId.slice(0, 40).replace(/[^\x20-\x7e]/g, '_');
  return `${prefix}#${h1.toString(16).padStart(8, '0')}${h2.toString(16).padStart(8, '0')}`;
}
