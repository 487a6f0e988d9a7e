'use strict';
// RememberStack tools for the Vercel AI SDK (`ai`, with `zod`): the engine's four
// assured operations and `rememberNote` as `tool()` definitions an agent can call.
//
//   const { rememberStackTools } = require('rememberstack/ai-sdk');
//   const tools = await rememberStackTools(memory);
//   await generateText({ model, tools, stopWhen: stepCountIs(5), prompt });
//
// The input schemas are zod schemas converted from the JSON Schemas the engine's
// operation registry publishes (`memory.operations()`), so a tool takes exactly the
// fields the engine takes, with the same bounds and descriptions. zod rather than the
// SDK's `jsonSchema()` helper: `jsonSchema()` forwards a schema to the model but does
// not validate the model's arguments unless given a validator, while a zod schema is
// both — the SDK checks each call before `execute` and hands a malformed one back to
// the model as a tool-input error it can repair. The conversion covers exactly the
// JSON Schema keywords the registry uses and throws on any other, so a new keyword
// fails loudly instead of being silently dropped.

const crypto = require('node:crypto');

function peer(name) {
  try {
    return require(name);
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(`'${name}'`)) {
      const err = new Error(
        `rememberstack/ai-sdk needs the peer dependency \`${name}\`: npm install ai zod (${e.message})`,
      );
      err.code = 'peer_not_found';
      throw err;
    }
    throw e;
  }
}

const { tool } = peer('ai');
const { z } = peer('zod');

// ---------------------------------------------------------------- JSON Schema → zod

const ANNOTATIONS = new Set(['description', 'default', 'title', '$schema']);
const KEYWORDS = {
  object: new Set(['type', 'properties', 'required', 'additionalProperties']),
  string: new Set(['type', 'minLength', 'maxLength', 'format', 'enum']),
  integer: new Set(['type', 'minimum', 'maximum']),
  number: new Set(['type', 'minimum', 'maximum']),
  boolean: new Set(['type']),
  array: new Set(['type', 'items', 'minItems', 'maxItems', 'uniqueItems']),
};

function unsupported(where, what) {
  const err = new Error(`rememberstack/ai-sdk: cannot convert the JSON Schema at ${where}: ${what}`);
  err.code = 'unsupported_schema';
  return err;
}

/**
 * Convert a JSON Schema to a zod schema, for the subset the engine's operation
 * schemas use: objects (properties, required, additionalProperties), strings
 * (minLength, maxLength, enum, format uuid | date-time), integers and numbers
 * (minimum, maximum), booleans and arrays (items, minItems, maxItems, uniqueItems),
 * with descriptions. Any other keyword throws (code `unsupported_schema`).
 */
function jsonSchemaToZod(schema, where = '#') {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw unsupported(where, 'not a schema object');
  }
  const type = schema.type;
  const allowed = typeof type === 'string' && Object.hasOwn(KEYWORDS, type) ? KEYWORDS[type] : undefined;
  if (!allowed) throw unsupported(where, `type ${JSON.stringify(type)}`);
  for (const key of Object.keys(schema)) {
    if (!allowed.has(key) && !ANNOTATIONS.has(key)) throw unsupported(where, `keyword \`${key}\``);
  }
  let out;
  switch (type) {
    case 'object': {
      const props = schema.properties || {};
      const required = new Set(schema.required || []);
      for (const name of required) {
        if (!(name in props)) throw unsupported(where, `required \`${name}\` has no property`);
      }
      if (Object.keys(props).length === 0 && schema.additionalProperties !== false) {
        // A free-form object (a note's metadata).
        out = z.record(z.string(), z.unknown());
        break;
      }
      const shape = {};
      for (const [name, sub] of Object.entries(props)) {
        const field = jsonSchemaToZod(sub, `${where}/properties/${name}`);
        shape[name] = required.has(name) ? field : field.optional();
      }
      const ap = schema.additionalProperties;
      if (ap === false) out = z.object(shape).strict();
      else if (ap === undefined || ap === true) out = z.object(shape).passthrough();
      else throw unsupported(where, 'additionalProperties other than true or false');
      break;
    }
    case 'string': {
      if (schema.enum !== undefined) {
        if (!Array.isArray(schema.enum) || schema.enum.length === 0 || !schema.enum.every((v) => typeof v === 'string')) {
          throw unsupported(where, 'enum must be a non-empty list of strings');
        }
        if ('minLength' in schema || 'maxLength' in schema || 'format' in schema) {
          throw unsupported(where, 'enum with length or format');
        }
        out = z.enum(schema.enum);
        break;
      }
      let s = z.string();
      if (schema.format === 'uuid') s = s.uuid();
      else if (schema.format === 'date-time') s = s.datetime({ offset: true });
      else if (schema.format !== undefined) throw unsupported(where, `format ${JSON.stringify(schema.format)}`);
      if (schema.minLength !== undefined) s = s.min(schema.minLength);
      if (schema.maxLength !== undefined) s = s.max(schema.maxLength);
      out = s;
      break;
    }
    case 'integer':
    case 'number': {
      let n = z.number();
      if (type === 'integer') n = n.int();
      if (schema.minimum !== undefined) n = n.min(schema.minimum);
      if (schema.maximum !== undefined) n = n.max(schema.maximum);
      out = n;
      break;
    }
    case 'boolean':
      out = z.boolean();
      break;
    case 'array': {
      if (schema.items === undefined) throw unsupported(where, 'an array without items');
      let a = z.array(jsonSchemaToZod(schema.items, `${where}/items`));
      if (schema.minItems !== undefined) a = a.min(schema.minItems);
      if (schema.maxItems !== undefined) a = a.max(schema.maxItems);
      if (schema.uniqueItems === true) {
        a = a.refine((items) => new Set(items.map((v) => JSON.stringify(v))).size === items.length, {
          message: 'items must be unique',
        });
      }
      out = a;
      break;
    }
  }
  if (typeof schema.description === 'string') out = out.describe(schema.description);
  return out;
}

// ---------------------------------------------------------------- the tools

/** Tool name → the registry operation it runs. */
const OPERATIONS = {
  resolveEntity: 'resolve_entity',
  claimsAndSourcesContext: 'claims_and_sources_context',
  factsContext: 'facts_context',
  combinedContext: 'combined_context',
};

const TOOL_NAMES = [...Object.keys(OPERATIONS), 'rememberNote'];

// The engine's `remember_note` tool schema (MCP; crates/rememberstack/src/ops.rs,
// `schema::remember_note`) as the model sees it: `request_id` is the integration's
// (derived from the content, so a retried call replays instead of conflicting) and
// `source_revision` is optional (default: a digest of the text).
const REMEMBER_NOTE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['source_key', 'text'],
  properties: {
    source_key: {
      type: 'string',
      minLength: 1,
      description:
        'A stable key naming what the note is about, e.g. "prefs/editor". A new note under the same key supersedes the previous one.',
    },
    text: { type: 'string', minLength: 1, description: 'What to remember, as a standalone statement.' },
    source_revision: {
      type: 'string',
      minLength: 1,
      description: 'The revision of this note (default: a digest of the text).',
    },
    metadata: { type: 'object', description: 'Free-form metadata kept with the note.' },
  },
};

const REMEMBER_NOTE_DESCRIPTION =
  'Remember an explicit note (a preference, a decision, a correction) under a source key. ' +
  'Use it for what the user asks you to remember. A new note under an existing key replaces the earlier one.';

function sha256(text) {
  return crypto.createHash('sha256').update(text).digest('hex');
}

function isPlainObject(v) {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function optionError(message) {
  const err = new Error(`rememberStackTools: ${message}`);
  err.code = 'invalid_input';
  return err;
}

/**
 * The RememberStack tools for the AI SDK: `{ resolveEntity, claimsAndSourcesContext,
 * factsContext, combinedContext, rememberNote }`, each a `tool()` whose execute runs
 * the engine call and resolves to its JSON (an envelope, a ContextBundle/v2, a note
 * record). Options:
 * - `include`: the tool names to return (default all five);
 * - `defaults`: per tool, engine input fields (snake_case) merged under the model's
 *   arguments, e.g. `{ claimsAndSourcesContext: { k: 8, budget: 4000 } }`;
 * - `noteKeyPrefix`: prefixed to every note's `source_key` (e.g. "agent/");
 * - `processNotes`: run the pipeline (`processUntilIdle`) after remembering a note so
 *   it can be recalled in the same run (default true; false when a worker processes
 *   the store).
 */
async function rememberStackTools(memory, options = {}) {
  if (!memory || typeof memory.call !== 'function' || typeof memory.operations !== 'function') {
    throw optionError('the first argument must be a rememberstack Memory');
  }
  if (!isPlainObject(options)) throw optionError('options must be an object');
  const known = new Set(['include', 'defaults', 'noteKeyPrefix', 'processNotes']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw optionError(`unknown option \`${key}\``);
  }
  const include = options.include ?? TOOL_NAMES;
  if (!Array.isArray(include)) throw optionError('`include` must be a list of tool names');
  for (const name of include) {
    if (!TOOL_NAMES.includes(name)) throw optionError(`unknown tool \`${name}\` (one of ${TOOL_NAMES.join(', ')})`);
  }
  const defaults = options.defaults ?? {};
  if (!isPlainObject(defaults)) throw optionError('`defaults` must be an object');
  for (const [name, value] of Object.entries(defaults)) {
    if (!TOOL_NAMES.includes(name)) throw optionError(`defaults for unknown tool \`${name}\``);
    if (!isPlainObject(value)) throw optionError(`defaults.${name} must be an object`);
  }
  const prefix = options.noteKeyPrefix ?? '';
  if (typeof prefix !== 'string') throw optionError('`noteKeyPrefix` must be a string');
  const processNotes = options.processNotes ?? true;

  const { operations } = await memory.operations();
  const byName = new Map(operations.map((op) => [op.name, op]));
  const tools = {};
  for (const name of include) {
    if (name === 'rememberNote') continue;
    const op = byName.get(OPERATIONS[name]);
    if (!op) throw optionError(`the engine's registry has no operation \`${OPERATIONS[name]}\``);
    const fixed = defaults[name] ?? {};
    tools[name] = tool({
      description: op.description,
      inputSchema: jsonSchemaToZod(op.input_schema, op.name),
      execute: async (input) => memory.call(op.name, { ...fixed, ...input }),
    });
  }
  if (include.includes('rememberNote')) {
    const fixed = defaults.rememberNote ?? {};
    tools.rememberNote = tool({
      description: REMEMBER_NOTE_DESCRIPTION,
      inputSchema: jsonSchemaToZod(REMEMBER_NOTE_SCHEMA, 'remember_note'),
      execute: async (input) => {
        const note = { ...fixed, ...input };
        note.source_key = prefix + note.source_key;
        if (note.source_revision === undefined) note.source_revision = `sha256-${sha256(note.text).slice(0, 16)}`;
        if (note.request_id === undefined) {
          const content = JSON.stringify([note.source_key, note.source_revision, note.text, note.metadata ?? null]);
          note.request_id = `ai-sdk-${sha256(content).slice(0, 32)}`;
        }
        const record = await memory.call('remember_note', note);
        if (processNotes) await memory.call('process_until_idle', {});
        return record;
      },
    });
  }
  return tools;
}

module.exports = { rememberStackTools, jsonSchemaToZod, TOOL_NAMES, OPERATIONS };
