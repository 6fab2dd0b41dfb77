// Lint rules that catch real bugs in Temporal code (floating promises, cycles, Node I/O in workflows)
// and encode the layout (README "Architecture"): each layer imports only the layers below it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

const NODE_IO = ['node:*', 'fs', 'fs/*', 'path', 'http', 'https', 'net', 'os', 'child_process', 'crypto', 'undici'];

/** Relative import patterns of folders of src/ (from src/<folder>/ or one level deeper). */
const srcFolders = (...folders) =>
  folders.flatMap((f) => ['../', '../../'].flatMap((up) => [`${up}${f}`, `${up}${f}/*`]));

/** A no-restricted-imports pattern for the layers above a folder of src/. */
const above = (message, ...layers) => ({ group: srcFolders(...layers), message });

const TEST_DOUBLE = {
  group: [
    '../emulator',
    '../emulator/*',
    '../../emulator',
    '../../emulator/*',
    '../../../emulator',
    '../../../emulator/*',
  ],
  message: 'src/ never uses the emulator: it is a test double and is not in the worker image.',
};

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', '.data/', 'dist/', 'bench/results/', 'test-artifacts/', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe/test return promises the runner itself tracks.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'inline-type-imports' },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
    },
  },
  {
    // A function that needs more than 80 lines says why, in an eslint-disable comment with a reason.
    files: ['src/**/*.ts', 'emulator/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, IIFEs: true }] },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O libraries. The
    // pure policies are imported by workflows, so the same holds for them.
    files: ['src/workflows/**/*.ts', 'src/policies/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: NODE_IO, message: 'Workflows must be deterministic: no Node I/O.' },
            {
              group: ['../activities', '../activities/*'],
              importNamePattern: '^(?!type )',
              message: 'Import activities as types only.',
              allowTypeImports: true,
            },
            {
              group: [...srcFolders('connection', 'observability'), '../api/client', '../../api/client'],
              message: 'Workflows never touch HTTP, connections or metrics.',
            },
            above(
              'Workflows and policies sit below the worker, the client library and the CLI.',
              'worker',
              'client',
              'cli',
              'config',
            ),
            TEST_DOUBLE,
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' }],
    },
  },
  {
    // The bottom layers: shared names and failures, the API client, connections, config, observability.
    files: [
      'src/shared/**/*.ts',
      'src/api/**/*.ts',
      'src/connection/**/*.ts',
      'src/codec/**/*.ts',
      'src/config/**/*.ts',
      'src/observability/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            above('A bottom layer imports nothing above it.', 'activities', 'workflows', 'worker', 'client', 'cli'),
            TEST_DOUBLE,
          ],
        },
      ],
    },
  },
  {
    files: ['src/activities/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            above('Activities sit below the worker, the client library and the CLI.', 'worker', 'client', 'cli'),
            TEST_DOUBLE,
          ],
        },
      ],
    },
  },
  {
    // The client library and the CLI start workflows by type name: they never load workflow, activity or worker code.
    files: ['src/client/**/*.ts', 'src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            above('The client and the CLI know workflows by type name only.', 'workflows', 'activities', 'worker'),
            TEST_DOUBLE,
          ],
        },
      ],
    },
  },
  {
    files: ['src/worker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            above(
              'The worker does not use the client library or the CLI; connections come from src/connection.',
              'client',
              'cli',
            ),
            TEST_DOUBLE,
          ],
        },
      ],
    },
  },
  {
    files: ['src/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [TEST_DOUBLE] }] },
  },
  {
    // The emulator stands in for the real API: it shares the API's types and nothing else of src/.
    files: ['emulator/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../src/*', '../src/**', '!../src/api', '!../src/api/types'],
              message: 'The emulator depends on nothing of src/ but src/api/types.',
            },
            {
              group: ['@temporalio/*', 'undici'],
              message: 'The emulator is a plain HTTP server: Node built-ins only.',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests, benchmarks and scripts use the emulator through its public entry (emulator/index.ts).
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ group: ['**/emulator/*'], message: 'Import the emulator from its index (emulator/index.ts).' }],
        },
      ],
    },
  },
);
