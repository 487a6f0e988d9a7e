// Compiled (never run) by `npm run typecheck` in test.sh: the declarations are
// valid TypeScript under `strict`, and the generated result types say what an
// agent reads from the engine. A wrong field name or type here fails the build.

import { Memory, RememberStackError } from '../index'
import type { ClaimResult, ContextBundle, EvidenceResult, FactResult, Results } from '../index'

async function agent(): Promise<string[]> {
  const memory = await Memory.open({ namespace: 'demo' })
  const receipt = await memory.ingestText('Alice lives in Lisbon.', { sourceRef: 'notes', kind: 'markdown' })
  const documentId: string = receipt.document_id
  const drained = await memory.processUntilIdle()
  const completed: number = drained.completed

  const evidence = await memory.claimsAndSourcesContext('Where does Alice live?', { k: 5 })
  const lines: string[] = []
  for (const r of evidence.results) {
    // The tag narrows the union: claims carry spans and validity, chunks a char span.
    if (r.kind === 'claim') {
      const claim: ClaimResult = r
      lines.push(`${claim.text} [${claim.validity.precision}] ${claim.spans.length} spans`)
    } else {
      lines.push(`${r.text} @${r.char_span.start}`)
    }
  }
  if (evidence.negative) lines.push(evidence.negative.kind)
  const more: boolean = evidence.truncation.more_available

  // Any call by its name resolves to that call's result type.
  const byName = await memory.call('claims_and_sources_context', { query: 'Where does Alice live?', k: 5 })
  const sameKind: Results['claims_and_sources_context'] = byName
  lines.push(`${sameKind.results.length} by name`)

  const facts = await memory.factsContext('Where does Alice live?', { temporalScope: { mode: 'history' } })
  for (const f of facts.results) {
    const fact: FactResult = f
    const until: string | null = fact.window.valid_until
    lines.push(`${fact.statement} until ${until ?? 'open'} (${fact.evidence_count} sources)`)
    if (fact.contradiction) lines.push(`disputed by ${fact.contradiction.members.length} other facts`)
  }

  const bundle: ContextBundle = await memory.combinedContext('Alice')
  const first: EvidenceResult | undefined = bundle.claims_and_sources.results[0]
  if (first) lines.push(first.document_title)

  const chunks = await memory.search('Lisbon', { k: 3 })
  lines.push(...chunks.results.map((c) => c.chunk_id))
  const claims = await memory.search('Lisbon', { grain: 'claims' })
  lines.push(...claims.results.map((c) => c.claim_id))

  const { documents } = await memory.documents()
  lines.push(...documents.map((d) => `${d.doc_id} ${d.version_count}`))
  const status: Results['status'] = await memory.status()
  lines.push(status.store)
  lines.push(documentId, String(completed), String(more))

  try {
    await memory.trace('not-an-id')
  } catch (e) {
    if (e instanceof RememberStackError && e.code === 'invalid_input') lines.push(e.message)
  }
  await memory.close()
  return lines
}

void agent
