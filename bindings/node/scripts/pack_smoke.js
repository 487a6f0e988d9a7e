'use strict';
// Smoke test of the packed npm package (run by test.sh in a scratch project where
// only the tarball from `npm pack` is installed): it loads from node_modules, ships
// its declarations and runs the engine offline end to end.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

async function main() {
  const entry = require.resolve('rememberstack');
  assert.ok(entry.includes(`${path.sep}node_modules${path.sep}rememberstack${path.sep}`), entry);
  const dir = path.dirname(entry);
  for (const shipped of ['index.d.ts', 'types.d.ts', 'native.d.ts', 'rememberstack.node', 'README.md']) {
    assert.ok(fs.existsSync(path.join(dir, shipped)), `the package lacks ${shipped}`);
  }
  // The integration subpaths ship and resolve; their frameworks are optional peers,
  // not installed here: the main package loads without them, the subpaths say what
  // to install.
  for (const [subpath, file] of [['ai-sdk', 'integrations/ai-sdk.js'], ['langchain', 'integrations/langchain.js']]) {
    assert.equal(require.resolve(`rememberstack/${subpath}`), path.join(dir, file));
    assert.ok(fs.existsSync(path.join(dir, file.replace(/\.js$/, '.d.ts'))), `the package lacks ${file} declarations`);
    assert.throws(() => require(`rememberstack/${subpath}`), (e) => e.code === 'peer_not_found' && /npm install/.test(e.message));
  }
  const { Memory, RememberStackError } = require('rememberstack');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-pack-'));
  try {
    const memory = await Memory.open(path.join(tmp, 'memory.db'), { namespace: 'pack' });
    const receipt = await memory.ingestText('Ada Lovelace wrote the first program.', { sourceRef: 'notes/ada' });
    assert.equal(receipt.outcome, 'created');
    await memory.processUntilIdle();
    const bundle = await memory.combinedContext('Who wrote the first program?');
    assert.ok(bundle.claims_and_sources.results.some((r) => r.text.includes('Ada Lovelace')));
    await assert.rejects(memory.trace('not-an-id'), (e) => e instanceof RememberStackError && e.code === 'invalid_input');
    await memory.close();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`pack smoke test passed: Node ${process.version}, ${dir}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
