// test-lane: cluster
// The production-shaped cluster of `npm run cluster`: the Temporal server of scripts/cluster/go.mod (or
// the older release DOCS_ADMIN_CLUSTER_RELEASE names: `npm run upgrade-check` runs this file on the oldest
// and the newest release the project supports) on PostgreSQL (persistence and SQL visibility) with
// production-default dynamic config. The project's real worker runs one
// staticExport and one agentJob on it end to end against the emulator, each started by workflow type
// name with plain JSON, as another service would start them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EmulatorHandle } from '../../emulator';
import type { AgentJobResult } from '../../src/shared/agent-job';
import { SEARCH_ATTRIBUTE_REGISTRATION } from '../../src/shared/search-attributes';
import type { StaticExportResult } from '../../src/shared/static-export';
import { ensureCluster } from '../../scripts/cluster/control';
import { CLUSTER_ADDRESS, CLUSTER_FILES } from '../../scripts/cluster/layout';
import { currentServerRelease } from '../../scripts/tools';
import { runningProcess } from '../../scripts/cluster/processes';
import {
  type ClusterEnv,
  clusterSkipReason,
  createClusterEnv,
  uniqueTaskQueue,
  waitFor,
  type DocsAdminStack,
  startDocsAdminStack,
} from '../helpers/temporal';

const KEY = 'mint_cluster_e2e_key_0123456789';

describe('production-shaped cluster (npm run cluster)', { skip: clusterSkipReason() }, () => {
  let env: ClusterEnv;
  let stack: DocsAdminStack | undefined;
  let emu: EmulatorHandle;
  const taskQueue = uniqueTaskQueue('cluster');
  const domain = `docs-${taskQueue.slice(-12)}.example.com`;
  const projectId = `cluster-${taskQueue.slice(-12)}`;

  before(async () => {
    env = await createClusterEnv();
    stack = await startDocsAdminStack(
      env,
      { agentActiveMs: 300, exportQueuedMs: 100, exportDurationMs: 800 },
      { ADMIN_API_KEY: KEY, TEMPORAL_ADDRESS: CLUSTER_ADDRESS, TEMPORAL_TASK_QUEUE: taskQueue },
    );
    emu = stack.emu;
  });

  after(async () => {
    await stack?.close();
    await env?.teardown();
  });

  const release = process.env.DOCS_ADMIN_CLUSTER_RELEASE || currentServerRelease().version;

  test(`it is the production server: ${release}, PostgreSQL for persistence and visibility, the search attributes`, async () => {
    const info = await env.connection.workflowService.getClusterInfo({});
    assert.equal(info.serverVersion, release);
    assert.equal(env.ensured.release, release, 'the data folder is at the release that serves it');
    // The plugin's family name, for either driver (the pgx driver is checked in docker-compose.test.ts).
    assert.equal(info.persistenceStore, 'postgres12');
    assert.equal(info.visibilityStore, 'postgres12');
    const { customAttributes } = await env.connection.operatorService.listSearchAttributes({ namespace: 'default' });
    for (const name of Object.keys(SEARCH_ATTRIBUTE_REGISTRATION))
      assert.ok(customAttributes?.[name], `${name} is registered`);
  });

  test('staticExport, started by type name with JSON, runs end to end', async () => {
    const handle = await env.client.workflow.start('staticExport', {
      taskQueue,
      workflowId: `cluster-export-${taskQueue}`,
      args: [{ domain }],
    });
    const result = (await handle.result()) as StaticExportResult;
    assert.equal(result.domain, domain);
    assert.ok(result.pageCount > 0);
    assert.match(result.bundleUrl, /^http:\/\/127\.0\.0\.1:\d+\//);
  });

  test('agentJob, started by type name with JSON, runs end to end (update-with-start on production defaults)', async () => {
    const handle = await env.client.workflow.start('agentJob', {
      taskQueue,
      workflowId: `cluster-agent-${taskQueue}`,
      args: [{ projectId, prompt: 'Document the cluster' }],
    });
    const result = (await handle.result()) as AgentJobResult;
    assert.equal(result.status, 'completed');
    assert.match(result.prLink ?? '', /^https:\/\/github\.com\/.+\/pull\/\d+$/);
    assert.equal(emu.jobs().filter((job) => job.projectId === projectId).length, 1, 'one agent job, one pull request');
  });

  test('SQL visibility finds both runs by their search attributes, and only them', async () => {
    const listed = async (query: string) => {
      const ids: string[] = [];
      for await (const execution of env.client.workflow.list({ query })) ids.push(execution.workflowId);
      return ids.sort();
    };
    const exportQuery = `TaskQueue="${taskQueue}" AND DocsDomain="${domain}"`;
    const agentQuery = `DocsProjectId="${projectId}" AND DocsJobStatus="completed"`;
    // Visibility is eventually consistent: wait until both runs are indexed, then check what is listed.
    await waitFor(async () => (await listed(exportQuery)).length > 0 && (await listed(agentQuery)).length > 0, {
      timeoutMs: 20_000,
      intervalMs: 200,
      what: 'both runs in the visibility store',
    });
    assert.deepEqual(await listed(exportQuery), [`cluster-export-${taskQueue}`]);
    assert.deepEqual(await listed(agentQuery), [`cluster-agent-${taskQueue}`]);
    assert.deepEqual(await listed(`TaskQueue="${taskQueue}"`), [
      `cluster-agent-${taskQueue}`,
      `cluster-export-${taskQueue}`,
    ]);
    assert.deepEqual(await listed(`DocsProjectId="${projectId}" AND DocsJobStatus="failed"`), []);
  });

  test('starting the cluster again is a no-op: nothing started, the same processes, at once', async () => {
    const pids = () => [CLUSTER_FILES.serverState, CLUSTER_FILES.uiState].map((file) => runningProcess(file)?.pid);
    const before = pids();
    const started = Date.now();
    const again = await ensureCluster();
    assert.deepEqual(again.started, []);
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started}ms`);
    assert.deepEqual(pids(), before);
  });
});
