#!/usr/bin/env node
'use strict';
// Build the addon with cargo (no napi CLI needed) and place it as
// rememberstack.node beside index.js. `--release` for an optimized build.
// Honours CARGO_TARGET_DIR (cargo metadata reports the target directory in use).

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = path.join(__dirname, '..');
const root = path.join(here, '..', '..');
const release = process.argv.includes('--release');

const cargo = process.env.CARGO || 'cargo';
execFileSync(cargo, ['build', '-p', 'rememberstack-node', ...(release ? ['--release'] : [])], {
  cwd: root,
  stdio: 'inherit',
});
const meta = JSON.parse(
  execFileSync(cargo, ['metadata', '--format-version', '1', '--no-deps'], {
    cwd: root,
    maxBuffer: 64 * 1024 * 1024,
  }),
);
const lib = {
  darwin: 'librememberstack_node.dylib',
  win32: 'rememberstack_node.dll',
}[process.platform] || 'librememberstack_node.so';
const built = path.join(meta.target_directory, release ? 'release' : 'debug', lib);
if (!fs.existsSync(built)) {
  console.error(`build.js: ${built} was not built`);
  process.exit(1);
}
// Copy under a temporary name, then rename: a running process never sees half a file.
const dest = path.join(here, 'rememberstack.node');
fs.copyFileSync(built, `${dest}.tmp`);
fs.renameSync(`${dest}.tmp`, dest);
console.error(`build.js: ${built} -> ${dest}`);
