#!/usr/bin/env node
'use strict';
// Regenerate native.d.ts, the declarations of the addon's own surface, from the Rust
// types: napi-derive writes one JSON type definition per `#[napi]` item to
// $NAPI_TYPE_DEF_TMP_FOLDER while the crate compiles (what the napi CLI reads); this
// script builds the crate with that folder set and renders the definitions (classes,
// functions, constants, interfaces and types; the kinds this crate uses).

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const here = path.join(__dirname, '..');
const root = path.join(here, '..', '..');
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'rememberstack-typedef-'));

try {
  execFileSync(process.env.CARGO || 'cargo', ['build', '-p', 'rememberstack-node'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, NAPI_TYPE_DEF_TMP_FOLDER: folder },
  });
  const file = path.join(folder, 'rememberstack-node');
  const defs = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));

  // Members one level in; JSDoc continuation lines (` * …`) keep their one space.
  const indent = (text) =>
    text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .map((l) => (l.startsWith('*') ? `   ${l}` : `  ${l}`))
      .join('\n');
  const classes = new Map();
  const out = [];
  for (const d of defs) {
    if (d.kind === 'struct') {
      classes.set(d.name, { doc: d.js_doc, body: [d.def].filter(Boolean) });
    }
  }
  for (const d of defs) {
    if (d.kind === 'impl' && d.def) {
      const c = classes.get(d.name) ?? { doc: '', body: [] };
      c.body.push(d.def);
      classes.set(d.name, c);
    }
  }
  for (const [name, c] of [...classes].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`${c.doc}export declare class ${name} {\n${indent(c.body.join('\n'))}\n}`);
  }
  for (const d of defs.sort((a, b) => a.name.localeCompare(b.name))) {
    switch (d.kind) {
      case 'fn':
        out.push(`${d.js_doc}export declare function ${d.def}`);
        break;
      case 'const':
        out.push(`${d.js_doc}export declare const ${d.def}`);
        break;
      case 'interface':
        out.push(`${d.js_doc}export interface ${d.name} {\n${indent(d.def)}\n}`);
        break;
      case 'type':
        out.push(`${d.js_doc}export type ${d.name} = ${d.def}`);
        break;
      case 'struct':
      case 'impl':
        break;
      default:
        throw new Error(`gen-native-dts: a type definition of kind ${d.kind} is not rendered: ${JSON.stringify(d)}`);
    }
  }
  const header =
    '// Generated from the Rust types by napi-derive (node scripts/gen-native-dts.js).\n' +
    '// Do not edit. The package API is the Memory class of index.d.ts.\n\n';
  fs.writeFileSync(path.join(here, 'native.d.ts'), `${header}${out.join('\n\n')}\n`);
  console.error(`gen-native-dts: wrote ${path.join(here, 'native.d.ts')}`);
} finally {
  fs.rmSync(folder, { recursive: true, force: true });
}
