// `npm run worker` (and the worker API the demo, tests and benchmarks import): the code is in src/worker/.
import { main } from './worker/worker';

export * from './worker/worker';

if (require.main === module) main();
