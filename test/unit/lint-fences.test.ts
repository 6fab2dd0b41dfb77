// test-lane: parallel
// The architecture as lint rules (eslint.config.mjs): every folder of src/ and both stand-ins have a
// fence (no-restricted-imports patterns of their own), and the import settings let no-cycle see cycles
// between .ts files (without them it silently saw none).
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ESLint, type Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';

const ROOT = path.resolve(__dirname, '../..');

type Pattern = { group: string[]; message: string };

async function fencePatterns(file: string): Promise<Pattern[]> {
  const config = (await new ESLint({ cwd: ROOT }).calculateConfigForFile(path.join(ROOT, file))) as Linter.Config;
  const rule = config.rules?.['no-restricted-imports'];
  const options = Array.isArray(rule) ? (rule[1] as { patterns?: Pattern[] } | undefined) : undefined;
  return options?.patterns ?? [];
}

describe('lint fences', () => {
  const folders = readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'types')
    .map((d) => d.name);

  test('every folder of src/ refuses imports of the tooling and of the layers above it', async () => {
    assert.ok(folders.length >= 14, `src/ has its folders (${folders.join(', ')})`);
    for (const folder of folders) {
      const patterns = await fencePatterns(`src/${folder}/module.ts`);
      const groups = patterns.flatMap((p) => p.group);
      assert.ok(
        groups.some((g) => g.includes('emulator')) || folder === 'shared',
        `src/${folder} may not import the emulator`,
      );
      assert.ok(patterns.length >= 2 || folder === 'shared', `src/${folder} has a fence of its own`);
    }
  });

  test('the stand-ins are fenced off: the provider does not reach Temporal, the emulator not src/', async () => {
    const provider = (await fencePatterns('sso-provider/main.ts')).flatMap((p) => p.group);
    assert.ok(provider.includes('@temporalio/*'));
    assert.ok(provider.includes('../src/**'));
    const emulator = (await fencePatterns('emulator/server.ts')).flatMap((p) => p.group);
    assert.ok(emulator.includes('../src/**'));
  });

  describe('no-cycle sees a cycle between two .ts modules', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lint-cycle-'));
    after(() => rmSync(dir, { recursive: true, force: true }));

    test("with the config's import settings", async () => {
      writeFileSync(path.join(dir, 'a.ts'), "import { b } from './b';\nexport const a = (): number => b() + 1;\n");
      writeFileSync(path.join(dir, 'b.ts'), "import { a } from './a';\nexport const b = (): number => (a ? 1 : 0);\n");
      const { IMPORT_SETTINGS } = (await import(path.join(ROOT, 'eslint.config.mjs'))) as {
        IMPORT_SETTINGS: Record<string, unknown>;
      };
      const eslint = new ESLint({
        cwd: dir,
        overrideConfigFile: true,
        overrideConfig: [
          {
            files: ['**/*.ts'],
            languageOptions: { parser: tseslint.parser as Linter.Parser },
            plugins: { 'import-x': importX as unknown as ESLint.Plugin },
            settings: IMPORT_SETTINGS,
            rules: { 'import-x/no-cycle': 'error' },
          },
        ],
      });
      const [result] = await eslint.lintFiles([path.join(dir, 'a.ts')]);
      assert.deepEqual(
        result?.messages.map((m) => m.ruleId),
        ['import-x/no-cycle'],
      );
    });
  });
});
