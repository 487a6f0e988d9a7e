// Compiled (never run) by `npm run typecheck`: the declarations of the two
// integration subpaths, resolved through the package's own `exports` (a
// self-reference), type-check against the installed frameworks under `strict`.

import { generateText, stepCountIs, type Tool } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import type { Document } from '@langchain/core/documents'
import { Memory } from 'rememberstack'
import type { ContextBundle, Results } from 'rememberstack'
import { rememberStackTools, jsonSchemaToZod, TOOL_NAMES, type RememberStackToolInputs } from 'rememberstack/ai-sdk'
import { RememberStackRetriever, documentsFromResult, type RememberStackMetadata } from 'rememberstack/langchain'

async function tools(memory: Memory): Promise<string[]> {
  const all = await rememberStackTools(memory, {
    defaults: { claimsAndSourcesContext: { k: 8, budget: 4000 } },
    noteKeyPrefix: 'agent/',
  })
  const recall: Tool<RememberStackToolInputs['claimsAndSourcesContext'], Results['claims_and_sources_context']> =
    all.claimsAndSourcesContext
  const lines: string[] = [String(recall.description), ...TOOL_NAMES]
  // `include` narrows the returned record to the tools asked for.
  const some = await rememberStackTools(memory, { include: ['combinedContext', 'rememberNote'] })
  const bundle = await some.combinedContext.execute?.({ query: 'Alice' }, { toolCallId: 't1', messages: [] })
  if (bundle && !(Symbol.asyncIterator in bundle)) {
    const b: ContextBundle = bundle
    lines.push(b.contract)
  }
  const model = new MockLanguageModelV3()
  const result = await generateText({ model, tools: all, stopWhen: stepCountIs(2), prompt: 'Where does Alice live?' })
  lines.push(result.text)
  lines.push(String(jsonSchemaToZod({ type: 'string' }).safeParse('x').success))
  return lines
}

async function retriever(memory: Memory): Promise<string[]> {
  const r = new RememberStackRetriever({ memory, k: 5, minRelevance: 0.1, tags: ['memory'] })
  const docs: Document<RememberStackMetadata>[] = await r.invoke('Where does Alice live?')
  const lines: string[] = []
  for (const d of docs) {
    const m = d.metadata
    lines.push(`${m.ref} ${m.document_id ?? ''} ${m.section_path?.join(' > ') ?? ''} ${m.event_ids.join(',')} ${m.relevance ?? 0}`)
    // The kind narrows the metadata.
    if (m.kind === 'claim') lines.push(`${m.validity.precision} ${m.spans.length}`)
    else if (m.kind === 'chunk') lines.push(String(m.char_span.start))
    else lines.push(`${m.subject_name} ${m.evidence_count} ${m.provenance.length}`)
  }
  const facts = new RememberStackRetriever({ memory, mode: 'facts', temporalScope: { mode: 'history' } })
  lines.push(...(await facts.invoke('Alice')).map((d) => d.pageContent))
  const bundle = await memory.combinedContext('Alice')
  lines.push(...documentsFromResult(bundle).map((d) => d.metadata.kind))
  return lines
}

void tools
void retriever
