#!/usr/bin/env node
// `npx docs-admin <command>` in a clone (after npm install): the same CLI as `npm run cli -- <command>`,
// src/starter.ts loaded through tsx's require hook (the compiled image runs dist/src/starter.js instead).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
require('tsx/cjs');
require('../src/starter.ts').main();
