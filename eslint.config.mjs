// Lint rules that catch real bugs in Temporal code: floating promises, cycles, and Node I/O in workflows.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', '.data/', 'bench/results/', 'test-artifacts/', '**/*.mjs'] },
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
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports', fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O libraries.
    // The pure policies are imported by workflows, so the same holds for them.
    files: ['src/workflows/**/*.ts', 'src/policies/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'fs', 'fs/*', 'path', 'http', 'https', 'net', 'os', 'child_process', 'crypto', 'undici'], message: 'Workflows must be deterministic: no Node I/O.' },
            { group: ['../activities', '../activities/*'], importNamePattern: '^(?!type )', message: 'Import activities as types only.', allowTypeImports: true },
            { group: ['../api/client', '../emulator/*'], message: 'Workflows never touch HTTP.' },
          ],
        },
      ],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' }],
    },
  },
);
