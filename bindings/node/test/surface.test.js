'use strict';
// The JavaScript surface, the addon's method list and index.d.ts agree.

const { it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { Memory } = require('..');

const camel = (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

function declared() {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
  const body = dts.slice(dts.indexOf('export declare class Memory'));
  const names = new Set();
  for (const m of body.matchAll(/^ {2}(?:static )?([a-zA-Z]+)[<(]/gm)) names.add(m[1]);
  names.delete('constructor');
  return names;
}

it('names every wrapped method after an engine method', () => {
  // A named method is optional (`call` reaches every method); one that exists
  // wraps the engine method of its name, apart from the binding's own helpers.
  const methods = new Set(Memory.methods());
  assert.ok(methods.size >= 30);
  const own = new Set(['call', 'close', 'withNamespace', 'searchClaims', 'searchFacts', 'resolveEntity', 'claimsAndSourcesContext', 'factsContext', 'combinedContext']);
  for (const n of Object.getOwnPropertyNames(Memory.prototype)) {
    const value = Object.getOwnPropertyDescriptor(Memory.prototype, n).value;
    if (n === 'constructor' || typeof value !== 'function' || own.has(n)) continue;
    const snake = n.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    assert.ok(methods.has(snake), `Memory.${n} wraps no engine method (${snake})`);
  }
});

it('declares exactly the methods the class has', () => {
  const own = new Set(
    Object.getOwnPropertyNames(Memory.prototype).filter(
      (n) => n !== 'constructor' && typeof Object.getOwnPropertyDescriptor(Memory.prototype, n).value === 'function',
    ),
  );
  for (const n of ['open', 'connect', 'methods']) own.add(n);
  assert.deepEqual([...declared()].sort(), [...own].sort());
});

it('has generated native declarations that match the addon', () => {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'native.d.ts'), 'utf8');
  const native = require(process.env.REMEMBERSTACK_NODE_ADDON || path.join(__dirname, '..', 'rememberstack.node'));
  assert.match(dts, /export declare class NativeMemory \{/);
  const declaredMembers = [...dts.matchAll(/^ {2}(?:static )?([a-zA-Z]+)\(/gm)].map((m) => m[1]).sort();
  const actual = [
    'constructor',
    ...Object.getOwnPropertyNames(native.NativeMemory.prototype).filter((n) => n !== 'constructor'),
    ...Object.getOwnPropertyNames(native.NativeMemory).filter((n) => typeof native.NativeMemory[n] === 'function'),
  ].sort();
  assert.deepEqual(declaredMembers, actual);
});

it('declares every method as resolving to its generated result type', () => {
  // types.d.ts is rendered from the Rust result types (tests/types.rs); its
  // `Results` names exactly the engine's methods, and each method of the class
  // resolves to its entry (search's overloads narrow the union by grain).
  const types = fs.readFileSync(path.join(__dirname, '..', 'types.d.ts'), 'utf8');
  const results = types.slice(types.indexOf('export interface Results {'));
  const keys = [...results.matchAll(/^ {2}([a-z_]+): /gm)].map((m) => m[1]);
  assert.deepEqual(keys.sort(), [...Memory.methods()].sort());

  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
  const body = dts.slice(dts.indexOf('export declare class Memory'));
  const snake = (s) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  let checked = 0;
  for (const m of body.matchAll(/^ {2}([a-zA-Z]+)\(.*\): Promise<(.*)>$/gm)) {
    const [, name, result] = m;
    if (name === 'search' || name === 'close') continue;
    assert.equal(result, `Results['${snake(name)}']`, `${name} should resolve to Results['${snake(name)}']`);
    checked += 1;
  }
  assert.equal(checked, Memory.methods().length - 1);
});
