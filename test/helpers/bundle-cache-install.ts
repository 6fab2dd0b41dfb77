// The SDK's bundleWorkflowCode, which `npm run worker` calls once at its start, through the test run's
// bundle cache (./bundle-cache.ts); installed by ./bundle-cache-preload.mjs. Nothing else changes.
import type * as Bundler from '@temporalio/worker/lib/workflow/bundler';
import { cachedBundle } from './bundle-cache';

// The module the SDK's index re-exports through a getter: replacing its export reaches every caller.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const bundler = require('@temporalio/worker/lib/workflow/bundler') as typeof Bundler;
const make = bundler.bundleWorkflowCode;
bundler.bundleWorkflowCode = (options) => cachedBundle(options, make);
