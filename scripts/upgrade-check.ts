// `npm run upgrade-check`: runs test/upgrade/check.ts (what it proves is written there) in a cluster data
// folder of its own, .data/upgrade-check, which it deletes and makes anew: never the .data/cluster of
// `npm run cluster`. Set before the cluster modules load, since they read DOCS_ADMIN_CLUSTER_DIR once.
import path from 'node:path';

process.env.DOCS_ADMIN_CLUSTER_DIR = path.join(__dirname, '..', '.data', 'upgrade-check');

import('../test/upgrade/check')
  .then(({ main }) => main())
  .then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`upgrade check failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exit(1);
    },
  );
