// Lint rules that catch real bugs in Temporal code (floating promises, cycles, Node I/O in workflows)
// and encode the layout (README "Layout"): each layer imports only the layers below it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

const NODE_IO = ['node:*', 'fs', 'fs/*', 'path', 'http', 'https', 'net', 'os', 'child_process', 'crypto', 'undici'];

/** Relative import patterns of folders of src/ (from src/<folder>/ or one level deeper). */
const srcFolders = (...folders) =>
  folders.flatMap((f) => ['../', '../../'].flatMap((up) => [`${up}${f}`, `${up}${f}/*`]));

/** A no-restricted-imports pattern for the layers above a folder of src/. */
const above = (message, ...layers) => ({ group: srcFolders(...layers), message });

/** Relative import patterns of a top-level folder, from up to three folders below the root. */
const rootFolder = (folder) =>
  ['../', '../../', '../../../'].flatMap((up) => [`${up}${folder}`, `${up}${folder}/*`, `${up}${folder}/**`]);

// src/ is the product (the worker image): it never loads the stand-ins (the emulator, the OpenID provider),
// the benchmarks, the scripts or the tests.
const TOOLING = {
  group: ['emulator', 'sso-provider', 'deploy', 'bench', 'scripts', 'test'].flatMap(rootFolder),
  message:
    'src/ never uses the emulator, sso-provider/, deploy/, bench/, scripts/ or test/: they are tooling around the product and not in the worker image.',
};

/** Nothing imports a test file: what two files share goes to a helper module. */
const NO_TEST_FILES = {
  group: ['**/*.test', '**/*.test.ts'],
  message: 'Import a helper module, never a test file.',
};

/** Outside src/, the emulator is used through its public entry (emulator/index.ts). */
const EMULATOR_ENTRY = {
  group: ['**/emulator/*'],
  message: 'Import the emulator from its index (emulator/index.ts).',
};

/** Without these import-x neither resolves nor parses a .ts import, and no-cycle sees no cycle at all. */
export const IMPORT_SETTINGS = {
  'import-x/extensions': ['.ts', '.js'],
  'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
  'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.d.ts', '.js', '.json'] })],
};

/** Test files: their test(...) and describe(...) bodies are exempt from the function length. */
const TEST_FILES = ['test/**/*.test.ts'];

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', '.data/', 'dist/', 'bench/results/', 'test-artifacts/', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    settings: IMPORT_SETTINGS,
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
    // Functions stay under 80 lines in every module: the product, the emulator, the benchmarks, the scripts
    // and the test helpers. Test files are exempt: a test(...) or describe(...) body reads as one scenario.
    files: ['**/*.ts'],
    ignores: TEST_FILES,
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
            TOOLING,
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' }],
    },
  },
  {
    // The bottom of the stack: the workflows' contracts (one module per workflow) and the few names they
    // all share. Everything imports them, workflows included, so they import nothing of src/ but each
    // other (no api/, no policies/: what a contract needs of those lives here) and no Node I/O.
    files: ['src/shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../*', '../**'],
              message:
                'src/shared is the bottom layer: it imports only its own modules (./x) and @temporalio/common|workflow.',
            },
            { group: NODE_IO, message: 'Workflows import src/shared: no Node I/O.' },
          ],
        },
      ],
    },
  },
  {
    // The layers just above: the API client, connections, codec, config, observability. They may use src/shared.
    files: [
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
            TOOLING,
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
            TOOLING,
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
            TOOLING,
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
            TOOLING,
          ],
        },
      ],
    },
  },
  {
    // The webhook receiver turns signed GitHub deliveries into keeper signals: a Temporal client that knows
    // keepers by type name, like the client library, so no workflow, activity or worker code.
    files: ['src/webhooks/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            above(
              'The webhook receiver signals keepers by type name: no workflow, activity, worker or CLI code.',
              'workflows',
              'activities',
              'worker',
              'client',
              'cli',
            ),
            TOOLING,
          ],
        },
      ],
    },
  },
  {
    // One start-and-stop for every small process: below everything, it knows nothing of the product.
    files: ['src/process/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../*', '../**'], message: 'src/process imports only its own modules and Node.' },
            TOOLING,
          ],
        },
      ],
    },
  },
  {
    // The entry points (worker, CLI, codec server, webhook receiver) wire the layers together.
    files: ['src/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [TOOLING] }] },
  },
  {
    // The deployment's one-shot secrets job (and the certificates the cluster's --tls shares): it makes keys,
    // tokens, certificates and the provider's directory; it never talks to Temporal.
    files: ['deploy/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['emulator', 'bench', 'scripts', 'test'].flatMap(rootFolder),
              message: 'deploy/ stands alone: the scripts and tests use it, never the reverse.',
            },
            { group: ['@temporalio/*'], message: 'The secrets job does not talk to Temporal.' },
          ],
        },
      ],
    },
  },
  {
    // The OpenID provider stands in for a company's identity provider, as the emulator for the platform: it
    // shares the role names and a few file helpers of src/, and nothing that talks to Temporal.
    files: ['sso-provider/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '../src/*',
                '../src/**',
                '!../src/shared',
                '!../src/shared/roles',
                '!../src/config',
                '!../src/config/watched-file',
                '!../src/config/secret-file',
                '!../src/process',
                '!../src/process/lifecycle',
                '!../src/process/small-server',
              ],
              message: 'The provider uses only src/shared/roles, src/config/{watched,secret}-file and src/process.',
            },
            {
              group: ['emulator', 'bench', 'scripts', 'test'].flatMap(rootFolder),
              message: 'The provider stands alone: the scripts and tests use it, never the reverse.',
            },
            { group: ['@temporalio/*'], message: 'The provider does not talk to Temporal.' },
          ],
        },
      ],
    },
  },
  {
    // The emulator stands in for the real API: it shares the API's types and the small servers' kit (which
    // imports only Node), nothing else of src/.
    files: ['emulator/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                '../src/*',
                '../src/**',
                '!../src/api',
                '!../src/api/types',
                '!../src/process',
                '!../src/process/small-server',
              ],
              message:
                'The emulator depends on nothing of src/ but src/api/types and the small-server kit (Node only).',
            },
            {
              group: [...rootFolder('bench'), ...rootFolder('scripts'), ...rootFolder('test')],
              message: 'The emulator stands alone: the benchmarks, scripts and tests use it, never the reverse.',
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
    // Workflow code of the tests (fixture workflows, the rollout's v2, the replay's incompatible build) is
    // bundled into the same deterministic sandbox as src/workflows: the same bans hold for it.
    files: ['test/fixtures/workflows.ts', 'test/rollout/v2-workflows/**/*.ts', 'test/replay/fixtures/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: NODE_IO, message: 'Workflows must be deterministic: no Node I/O.' },
            NO_TEST_FILES,
            EMULATOR_ENTRY,
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' }],
    },
  },
  {
    // scripts/ (npm start, the cluster, the test runner) sits below the benchmarks and the tests: it may
    // drive the test harness (test/helpers) but never loads a benchmark or another folder of test/.
    files: ['scripts/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            EMULATOR_ENTRY,
            NO_TEST_FILES,
            {
              group: [...rootFolder('bench'), '../test/*', '!../test/helpers', '../../test/*', '!../../test/helpers'],
              message: 'scripts/ uses src/, the emulator and the test harness (test/helpers) only.',
            },
          ],
        },
      ],
    },
  },
  {
    // The benchmarks and the tests' helper modules use the product, the emulator's entry, the scripts and
    // each other's helpers; never a test file.
    files: ['bench/**/*.ts', 'test/**/*.ts'],
    ignores: ['test/fixtures/workflows.ts', 'test/rollout/v2-workflows/**/*.ts', 'test/replay/fixtures/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [EMULATOR_ENTRY, NO_TEST_FILES] }] },
  },
);
