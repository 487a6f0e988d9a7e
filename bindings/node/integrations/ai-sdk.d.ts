// Type declarations of `rememberstack/ai-sdk` (integrations/ai-sdk.js): RememberStack
// tools for the Vercel AI SDK. The tools' inputs are the engine's input fields
// (snake_case, as MCP's tools take them); their outputs are the engine's results
// (types.d.ts).

import type { Tool } from 'ai'
import type { Memory, TemporalScope } from '../index'
import type { JsonObject, Results, Uuid } from '../types'

/** The tools, by name. */
export type RememberStackToolName =
  | 'resolveEntity'
  | 'claimsAndSourcesContext'
  | 'factsContext'
  | 'combinedContext'
  | 'rememberNote'

/** A time scope as the engine takes it (`mode` current | at | overlap | history). */
export type TemporalScopeInput = TemporalScope

/** The recall fields `claims_and_sources_context` and `facts_context` share. */
export interface RecallInput {
  /** The question, in plain words. */
  query: string
  /** Anchor entities (ids from resolveEntity). */
  entity_ids?: Uuid[]
  k?: number
  /** Fit results to this many characters, whole items only. */
  budget?: number
  cursor?: string
  record_receipt?: boolean
  request_id?: string
  subject?: string
  purpose?: string
}

/** Each tool's input: the model's arguments, validated by the tool's zod schema. */
export interface RememberStackToolInputs {
  resolveEntity: { name: string; k?: number }
  claimsAndSourcesContext: RecallInput
  factsContext: RecallInput & { temporal_scope?: TemporalScopeInput }
  combinedContext: { query: string; entity_ids?: Uuid[]; temporal_scope?: TemporalScopeInput }
  rememberNote: { source_key: string; text: string; source_revision?: string; metadata?: JsonObject }
}

/** Each tool's output: the engine's JSON answer. */
export interface RememberStackToolOutputs {
  resolveEntity: Results['resolve_entity']
  claimsAndSourcesContext: Results['claims_and_sources_context']
  factsContext: Results['facts_context']
  combinedContext: Results['combined_context']
  rememberNote: Results['remember_note']
}

export type RememberStackTools = {
  [N in RememberStackToolName]: Tool<RememberStackToolInputs[N], RememberStackToolOutputs[N]>
}

export interface RememberStackToolsOptions<N extends RememberStackToolName = RememberStackToolName> {
  /** The tools to return (default: all five). */
  include?: readonly N[]
  /** Per tool, engine input fields (snake_case) merged under the model's arguments. */
  defaults?: { [T in RememberStackToolName]?: Partial<RememberStackToolInputs[T]> }
  /** Prefixed to every note's `source_key` (e.g. "agent/"). */
  noteKeyPrefix?: string
  /** Run the pipeline after remembering a note, so it can be recalled in the same run (default true). */
  processNotes?: boolean
}

/**
 * The RememberStack tools for the AI SDK (`generateText({ tools })`): the four assured
 * operations, with input schemas converted from the engine's operation registry, and
 * `rememberNote`. Rejects with code `invalid_input` for bad options.
 */
export declare function rememberStackTools<N extends RememberStackToolName = RememberStackToolName>(
  memory: Memory,
  options?: RememberStackToolsOptions<N>,
): Promise<Pick<RememberStackTools, N>>

/**
 * A zod schema for a JSON Schema of the subset the engine's operation schemas use
 * (objects, strings with length/enum/uuid/date-time, integers and numbers with bounds,
 * booleans, arrays with items/length/uniqueness, descriptions). Throws (code
 * `unsupported_schema`) on any other keyword. Returned untyped: its shape is data.
 */
export declare function jsonSchemaToZod(schema: JsonObject, where?: string): import('zod').ZodType

/** All tool names, in the order `rememberStackTools` returns them. */
export declare const TOOL_NAMES: readonly RememberStackToolName[]
/** Tool name → the registry operation it runs (rememberNote runs `remember_note`, outside the registry). */
export declare const OPERATIONS: {
  readonly resolveEntity: 'resolve_entity'
  readonly claimsAndSourcesContext: 'claims_and_sources_context'
  readonly factsContext: 'facts_context'
  readonly combinedContext: 'combined_context'
}
