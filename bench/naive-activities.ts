// Activities of the naive worker (bench/naive-workflows.ts): plain calls through the product's API
// client to the emulator, nothing else. `npx tsx bench/naive-activities.ts` runs the naive worker
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, ADMIN_API_URL, ADMIN_API_KEY).
import { AdminApiClient } from '../src/api/client';

export function createNaiveActivities(api: AdminApiClient) {
  return {
    createAgentJob: (projectId: string, prompt: string) => api.createAgentJob(projectId, prompt),
    getAgentJob: (projectId: string, jobId: string) => api.getAgentJob(projectId, jobId),
    startExport: (domain: string) => api.startExport({ domain }),
    getExport: (jobId: string) => api.getExport(jobId),
    generateBundle: (jobId: string) => api.generateBundle(jobId),
  };
}

export type NaiveActivities = ReturnType<typeof createNaiveActivities>;

async function naiveWorkerMain(): Promise<void> {
  const { NativeConnection, Worker, Runtime, DefaultLogger } = await import('@temporalio/worker');
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: ['SIGINT', 'SIGTERM'] });
  const env = process.env;
  const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
  const api = new AdminApiClient({ baseUrl: env.ADMIN_API_URL ?? '', apiKey: env.ADMIN_API_KEY });
  try {
    const worker = await Worker.create({
      connection,
      namespace: env.TEMPORAL_NAMESPACE ?? 'default',
      taskQueue: env.TEMPORAL_TASK_QUEUE ?? 'bench-naive',
      workflowsPath: require.resolve('./naive-workflows'),
      activities: createNaiveActivities(api),
    });
    process.stderr.write('naive worker started\n');
    await worker.run();
  } finally {
    await api.close();
    await connection.close();
  }
}

if (require.main === module) {
  naiveWorkerMain().catch((err: unknown) => {
    process.stderr.write(`naive worker failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  });
}
