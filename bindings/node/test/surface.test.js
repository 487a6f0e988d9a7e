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
  for (const m of body.matchAll(/^ {2}(?:static )?([a-zA-Z]+)\(/gm)) names.add(m[1]);
  names.delete('constructor');
  return names;
}

it('wraps every engine method the addon answers', () => {
  const methods = Memory.methods();
  assert.ok(methods.length >= 30);
  for (const m of methods) {
    assert.equal(typeof Memory.prototype[camel(m)], 'function', `no Memory.${camel(m)} for ${m}`);
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
