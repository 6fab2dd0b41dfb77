// Loaded with --import (after tsx) into the worker processes the tests spawn (bundleCacheNodeArgs in
// ./bundle-cache.ts): their one workflow bundle comes from the test run's cache. Plain JavaScript, as
// the SDK's workflow threads load it too (they inherit the process's --import) and leave it alone.
import { isMainThread } from 'node:worker_threads';

if (isMainThread) await import('./bundle-cache-install.ts');
