// test-lane: parallel
// The cluster's sinks file (npm run cluster): made with the domains each sink serves; one an earlier
// release made (no domains) and nobody edited gets them; an edited one is named, never rewritten.
import assert from 'node:assert/strict';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { parseSinksFile } from '../../src/activities/sinks-file';
import { clusterSinksText, ensureClusterSinks } from '../../scripts/cluster/sinks';

test("the cluster's sinks file lists each sink's domains, and an unedited older one gets them", async () => {
  const dir = await fsp.mkdtemp(path.join(tmpdir(), 'cluster-sinks-'));
  try {
    const deployments = path.join(dir, 'deployments');
    const file = path.join(dir, 'sinks.yaml');
    const lines: string[] = [];
    const ensure = () => ensureClusterSinks((l) => lines.push(l), { file, dir: deployments });

    ensure();
    const made = parseSinksFile(await fsp.readFile(file, 'utf8'), file);
    assert.deepEqual([...made.invalid], []);
    assert.deepEqual(
      [...made.sinks].map(([name, s]) => [name, s.domains]),
      [
        ['local-config', ['docs.example.com']],
        ['local-mirror', ['docs.internal']],
      ],
    );

    // What the release before domains wrote, unedited: rewritten with them.
    const older = {
      allowedDirs: [deployments],
      sinks: {
        'local-config': { type: 'file', path: path.join(deployments, 'config', 'staticExport.json') },
        'local-mirror': {
          type: 'mirror',
          dir: path.join(deployments, 'mirror'),
          urlPrefix: 'http://127.0.0.1:8088/bundles',
        },
      },
    };
    const olderText = `# KEEPER_SINKS_FILE of this cluster's workers (deploy/sinks.yaml explains each kind)\n${stringify(older)}`;
    await fsp.writeFile(file, olderText);
    ensure();
    assert.equal(await fsp.readFile(file, 'utf8'), clusterSinksText(deployments));
    assert.match(lines.at(-1)!, /added the domains each sink serves/);

    // Edited by its operator: left alone, the sinks without domains named.
    const edited = `${olderText}  my-hook: {type: command, argv: ["true"], domains: [docs.example.com]}\n`;
    await fsp.writeFile(file, edited);
    ensure();
    assert.equal(await fsp.readFile(file, 'utf8'), edited);
    assert.match(
      lines.at(-1)!,
      /local-config, local-mirror list no domains: the workers refuse them until each has "domains:/,
    );
  } finally {
    await fsp.rm(dir, { recursive: true, force: true });
  }
});
