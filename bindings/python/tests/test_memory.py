"""The synchronous API against the real engine (embedded store, offline providers)."""

import json
import os
import shutil
import subprocess

import pytest

import remember
from conftest import SAMPLES


def test_ingest_and_process(loaded):
    m = loaded.memory
    assert loaded.doc.outcome == "created"
    assert loaded.doc.source_kind == "file"
    assert loaded.doc.new_lineage is True
    assert loaded.conv.source_kind == "conversation"
    assert loaded.conv.source_ref == "samples/standup"
    assert loaded.report.completed > 0
    assert loaded.report.dead_lettered == 0
    docs = m.documents()
    assert isinstance(docs, list)
    assert sorted(d.doc_id for d in docs) == sorted(
        [loaded.doc.document_id, loaded.conv.document_id]
    )
    detail = m.document(loaded.doc.document_id)
    assert detail.title == "Field notes: the Lisbon office"
    assert detail.chunk_count > 0
    # Idempotent: the same bytes again are no new version.
    again = m.ingest_conversation(_standup(), source_ref="samples/standup")
    assert again.document_id == loaded.conv.document_id
    assert again.outcome != "created"


def _standup():
    return json.loads((SAMPLES / "standup.json").read_text())


def test_search_reads_as_attributes_and_dicts(loaded):
    env = loaded.memory.search("why did the nightly backup fail?", k=3)
    assert env.contract == "rememberstack.envelope/v1"
    assert env.namespace == "default"
    assert 1 <= len(env.results) <= 3
    first = env.results[0]
    raw = env.to_dict()
    assert first.text == raw["results"][0]["text"]
    assert first["chunk_id"] == raw["results"][0]["chunk_id"]
    assert "backup" in " ".join(r.text for r in env.results).lower()
    assert isinstance(first.scores.fused, float)
    # The Result keeps the engine's JSON: to_dict is a copy, the object is read-only.
    raw["results"].clear()
    assert env.to_dict()["results"]
    with pytest.raises(AttributeError):
        env.results = []
    with pytest.raises(AttributeError):
        env.no_such_field
    # Grains and filters.
    claims = loaded.memory.search_claims("who raised the bucket quota?", k=2)
    assert all(c.claim_id for c in claims.results)
    scoped = loaded.memory.search("backup", document_ids=[loaded.conv.document_id])
    assert scoped.results
    assert {r.document_id for r in scoped.results} == {loaded.conv.document_id}


def test_combined_context_returns_evidence_with_provenance(loaded):
    bundle = loaded.memory.combined_context("why did the nightly backup fail?")
    assert bundle.contract == "ContextBundle/v2"
    evidence = bundle.claims_and_sources.results
    assert evidence, bundle
    ids = {loaded.doc.document_id, loaded.conv.document_id}
    for item in evidence:
        assert item.kind in ("claim", "chunk")
        assert item.document_id in ids
        assert item.source_ref
        assert item.version_id
        assert item.text
    from_chat = [e for e in evidence if e.document_id == loaded.conv.document_id]
    assert from_chat, "the conversation's turn about the failed backup is evidence"
    # Provenance down to the message ids of the turns.
    assert any(set(e.event_ids) & {"m1", "m2"} for e in from_chat)
    claims = [e for e in evidence if e.kind == "claim"]
    for c in claims:
        assert c.spans and all(s.end > s.start for s in c.spans)
    assert bundle.facts.operation.name == "facts_context"
    # Same answer as the registry's operation, to the field (times aside).
    via_registry = loaded.memory.run_operation(
        "combined_context", {"query": "why did the nightly backup fail?"}
    )
    assert [e.to_dict() for e in via_registry.claims_and_sources.results] == [
        e.to_dict() for e in evidence
    ]


def test_context_operations_take_the_operation_fields(loaded):
    m = loaded.memory
    env = m.claims_and_sources_context("backup quota", k=2, record_receipt=True)
    assert len(env.results) <= 2
    assert env.receipt_id
    receipt = m.inspect_receipt(env.receipt_id)
    assert receipt.to_dict()
    resolution = m.resolve_receipt(env.receipt_id)
    assert resolution.to_dict()
    item = env.results[0]
    item_id = item.claim_id if item.kind == "claim" else item.chunk_id
    fb = m.feedback(env.receipt_id, f"{item.kind}:{item_id}", "useful", comment="right on")
    assert fb.rating == "useful"
    assert [f.rating for f in m.list_feedback(receipt_id=env.receipt_id)] == ["useful"]
    facts = m.facts_context("bucket quota", temporal_scope="history", k=5)
    assert facts.temporal_scope.mode == "history"
    entities = m.resolve_entity("Maria Santos")
    assert entities.grain == "entity"
    names = [op.name for op in m.operations()]
    assert names == [
        "resolve_entity",
        "claims_and_sources_context",
        "facts_context",
        "combined_context",
    ] or sorted(names) == sorted(
        ["resolve_entity", "claims_and_sources_context", "facts_context", "combined_context"]
    )


def test_primitives(loaded):
    m = loaded.memory
    hit = m.search("espresso machine", k=1).results[0]
    around = m.adjacent_chunks(hit.chunk_id, window=1)
    assert hit.chunk_id in [r.chunk_id for r in around.results]
    docs = m.search_documents("Lisbon")
    assert loaded.doc.document_id in [d.document_id for d in docs.results]
    status = m.status()
    assert status.to_dict()
    pack = m.export()
    assert pack.format == "rememberstack.pack/v1"
    assert pack.digest
    facts = m.search_facts("bucket quota", k=3).results
    if facts:
        trace = m.trace(facts[0].fact_id)
        assert trace.fact.fact_id == facts[0].fact_id
        assert trace.evidence


def test_append_messages(memory):
    msgs = [
        {"event_id": "a1", "speaker": "Ana", "text": "The demo moved to Thursday."},
        {"event_id": "a2", "speaker": "Ben", "text": "Then I will book the big room."},
    ]
    first = memory.append_messages("chat/live", msgs)
    assert first.appended == 2
    replay = memory.append_messages("chat/live", msgs[:1])
    assert replay.appended == 0 and replay.already_present == 1
    with pytest.raises(remember.Conflict) as e:
        memory.append_messages(
            "chat/live", [{"event_id": "a1", "speaker": "Ana", "text": "Something else."}]
        )
    assert e.value.code == "conflict"
    memory.process_until_idle()
    assert "Thursday" in " ".join(r.text for r in memory.search("when is the demo?").results)


def test_notes_lifecycle_with_expected_versions(memory):
    assert memory.set_note_policy("candidate").start_as == "candidate"
    note = memory.remember_note(
        "Prefers tea over coffee.",
        source_key="prefs/ana",
        source_revision="1",
        request_id="req-1",
        metadata={"by": "test"},
    )
    assert note.lifecycle == "candidate"
    v = note.lifecycle_version
    # Replaying the request is the same note; reusing its id for other text is refused.
    assert memory.remember_note(
        "Prefers tea over coffee.",
        source_key="prefs/ana",
        source_revision="1",
        request_id="req-1",
        metadata={"by": "test"},
    ).version_id == note.version_id
    with pytest.raises(remember.RequestConflict) as e:
        memory.remember_note(
            "Prefers coffee.", source_key="prefs/ana", source_revision="1", request_id="req-1"
        )
    assert e.value.code == "request_conflict"
    assert isinstance(e.value, remember.Conflict)
    with pytest.raises(remember.RevisionConflict):
        memory.remember_note(
            "Prefers coffee.", source_key="prefs/ana", source_revision="1", request_id="req-9"
        )
    # A stale expected version is a conflict and changes nothing.
    with pytest.raises(remember.Conflict) as e:
        memory.promote_note(note.version_id, v + 7)
    assert e.value.code == "conflict"
    assert [n.lifecycle for n in memory.list_notes().notes] == ["candidate"]
    promoted = memory.promote_note(note.version_id, v)
    assert promoted.lifecycle == "promoted"
    assert promoted.lifecycle_version > v
    with pytest.raises(remember.Conflict):
        memory.archive_note(note.version_id, v)
    archived = memory.archive_note(note.version_id, promoted.lifecycle_version)
    assert archived.lifecycle == "archived"
    # A second revision, promoted, then revoked for good.
    second = memory.remember_note(
        "Prefers green tea.", source_key="prefs/ana", source_revision="2", request_id="req-2"
    )
    second = memory.promote_note(second.version_id, second.lifecycle_version)
    memory.process_until_idle()
    assert "green tea" in " ".join(r.text for r in memory.search("what tea does Ana prefer?").results)
    revoked = memory.revoke_note(second.version_id, second.lifecycle_version)
    assert revoked.lifecycle == "revoked"
    assert "green tea" not in " ".join(r.text for r in memory.search("green tea").results)
    page = memory.list_notes(limit=10)
    assert sorted(n.lifecycle for n in page.notes) == ["archived", "revoked"]
    with pytest.raises(remember.Revoked):
        memory.remember_note(
            "Prefers green tea.", source_key="prefs/ana", source_revision="2", request_id="req-3"
        )


def test_forget_leaves_nothing_searchable(memory):
    secret = "The vault combination word is zorblaxian quintessence."
    doc = memory.ingest_text(secret, source_ref="notes/vault")
    memory.ingest_text("The cafeteria serves soup on Mondays.", source_ref="notes/soup")
    memory.process_until_idle()
    hits = memory.search("zorblaxian quintessence vault combination")
    assert doc.document_id in [r.document_id for r in hits.results]
    report = memory.forget_document(doc.document_id)
    assert report.doc_id == doc.document_id
    assert report.verification
    for query in ["zorblaxian quintessence", "vault combination word"]:
        for env in (
            memory.search(query),
            memory.search_claims(query),
            memory.claims_and_sources_context(query),
        ):
            assert all(r.document_id != doc.document_id for r in env.results)
            assert "zorblaxian" not in json.dumps(env.to_dict()["results"])
        bundle = memory.combined_context(query)
        for child in (bundle.claims_and_sources, bundle.facts):
            assert "zorblaxian" not in json.dumps(child.to_dict()["results"])
    assert doc.document_id not in [d.doc_id for d in memory.documents()]
    with pytest.raises(remember.ForgottenContent):
        memory.ingest_text(secret, source_ref="notes/vault-again")
    with pytest.raises(remember.DocumentNotFound):
        memory.forget_document(doc.document_id)


def test_delete_document(loaded):
    m = loaded.memory
    deletion = m.delete_document(loaded.doc.document_id)
    assert deletion.doc_id == loaded.doc.document_id
    with pytest.raises(remember.DocumentNotFound) as e:
        m.delete_document(loaded.doc.document_id)
    assert e.value.code == "document_not_found"


def test_to_dict_is_the_cli_json(loaded, db):
    """`to_dict()` is exactly what `remember --json` prints for the same store."""
    cli = os.environ.get("REMEMBER_CLI") or shutil.which("remember")
    if not cli:
        pytest.skip("no `remember` binary (test.sh sets REMEMBER_CLI when it is built)")
    m = loaded.memory

    def run(*args):
        out = subprocess.run(
            [cli, "--db", str(db), "--json", *args], check=True, capture_output=True, text=True
        )
        return json.loads(out.stdout)

    assert run("documents", "list") == {"documents": [d.to_dict() for d in m.documents()]}
    assert run("documents", "show", loaded.doc.document_id) == m.document(
        loaded.doc.document_id
    ).to_dict()
    assert run("operations", "list") == {"operations": [o.to_dict() for o in m.operations()]}
    assert run("notes", "list") == m.list_notes().to_dict()
    assert run("status") == m.status().to_dict()
    # Envelopes, field for field.
    q = "why did the nightly backup fail?"
    assert run("search", q, "--k", "3") == m.search(q, k=3).to_dict()
    assert run("search", q, "--k", "3", "--target", "claims") == m.search_claims(q, k=3).to_dict()
    op = ["operations", "run", "claims_and_sources_context", "--input", json.dumps({"query": q})]
    assert run(*op) == m.claims_and_sources_context(q).to_dict()
    # The bundle's facts scope echoes its evaluation instant, which differs by a hair.
    op = ["operations", "run", "combined_context", "--input", json.dumps({"query": q})]
    cli_bundle, py_bundle = run(*op), m.combined_context(q).to_dict()
    for bundle in (cli_bundle, py_bundle):
        bundle["facts"]["temporal_scope"].pop("evaluated_at")
    assert cli_bundle == py_bundle


def test_result_json_round_trip(loaded):
    env = loaded.memory.search("backup")
    assert json.loads(env.to_json()) == env.to_dict()
    assert env == env.to_dict()
    assert "results" in dir(env)
    assert env.fields()[0] == "contract"


def test_memory_default_path_and_config(tmp_path, monkeypatch):
    monkeypatch.setenv("REMEMBERSTACK_DB", str(tmp_path / "env.db"))
    with remember.Memory(namespace="team-a") as m:
        assert m.namespace == "team-a"
        m.ingest_text("Hello from the environment's store.", source_ref="notes/env")
    assert (tmp_path / "env.db").exists()
    with remember.Memory(tmp_path / "h.db", embedder={"provider": "hashing", "dimension": 64}) as m:
        m.ingest_text("Sixty-four dimensions.", source_ref="n")
        assert m.process_until_idle().dead_lettered == 0
    with pytest.raises(remember.ConfigError) as e:
        remember.Memory(tmp_path / "c.db", config={"engine": {"no_such_key": 1}})
    assert e.value.code == "config"
    with pytest.raises(remember.ConfigError):
        remember.Memory(tmp_path / "c.db", embedder={"provider": "magic"})
    # The CLI's configuration file and environment apply.
    bad = tmp_path / "bad.toml"
    bad.write_text("[engine]\nlease = 0\n")
    with pytest.raises(remember.ConfigError):
        remember.Memory(tmp_path / "c.db", config_file=bad)
    monkeypatch.setenv("REMEMBERSTACK_CONFIG", str(bad))
    with pytest.raises(remember.ConfigError):
        remember.Memory(tmp_path / "c.db")
    monkeypatch.delenv("REMEMBERSTACK_CONFIG")
    monkeypatch.setenv("REMEMBERSTACK_EMBEDDER", "magic")
    with pytest.raises(remember.ConfigError):
        remember.Memory(tmp_path / "c.db")
    monkeypatch.setenv("REMEMBERSTACK_EMBEDDER", "hashing")
    monkeypatch.setenv("REMEMBERSTACK_MAX_SOURCE_BYTES", "10")
    with remember.Memory(tmp_path / "small.db") as m:
        with pytest.raises(remember.TooLarge):
            m.ingest_text("far more than ten bytes of text", source_ref="n")
    with pytest.raises(remember.InvalidInput):
        remember.Memory(tmp_path / "c.db", namespace="not a namespace!")
    with pytest.raises(remember.ConfigError):
        remember.Memory.connect("sqlite:///nope")


def test_postgres_store_when_database_url_is_set():
    """`Memory.connect` on PostgreSQL (run where DATABASE_URL is set, as in CI)."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        pytest.skip("DATABASE_URL is not set: no PostgreSQL to test against")
    import uuid

    schema = f"py_{uuid.uuid4().hex[:12]}"
    with remember.Memory.connect(url, config={"store": {"schema": schema}}) as m:
        doc = m.ingest_text("The Lisbon office opened in March 2024.", source_ref="notes/pg")
        m.process_until_idle()
        hits = m.search("when did the Lisbon office open?")
        assert doc.document_id in [r.document_id for r in hits.results]
        bundle = m.combined_context("when did the Lisbon office open?")
        assert bundle.claims_and_sources.results
        with pytest.raises(remember.DocumentNotFound):
            m.delete_document("123e4567-e89b-12d3-a456-426614174000")
        m.forget_document(doc.document_id)
        assert m.documents() == []


def test_facts_graph_and_entity_admin(memory):
    doc = memory.ingest_text(
        "# Team\n\nAlice works for Acme. Bob works for Acme. Acme is based in Lisbon.\n",
        source_ref="notes/team",
        source_time="2024-04-01T00:00:00Z",
    )
    memory.process_until_idle()
    facts = memory.facts()
    assert any(f.statement == "Alice works for Acme." for f in facts), [f.statement for f in facts]
    assert "works_for" in {p.name for p in memory.predicates()}
    assert memory.claim_decisions(doc.document_id), "the extraction ledger is empty"
    # A page at a time, continuing with the cursor: the same facts in the same order.
    paged, cursor = [], None
    while True:
        page = memory.facts_page(limit=1, cursor=cursor)
        paged += [f.fact_id for f in page.facts]
        cursor = page["cursor"] if "cursor" in page else None
        if cursor is None:
            break
    assert paged == [f.fact_id for f in facts]
    with pytest.raises(remember.InvalidParameter):
        memory.facts_page(limit=1001)

    names = {e.canonical_name: e.entity_id for e in memory.entities()}
    alice, acme = names["Alice"], names["Acme"]
    # Only Alice's facts, and the graph one hop out from her.
    assert {f.subject_name for f in memory.facts(entity_id=alice)} == {"Alice"}
    hood = memory.neighborhood([alice], depth=2)
    reached = {(r.fact.subject_name, r.fact.object_name, r.depth) for r in hood.results}
    assert ("Alice", "Acme", 1) in reached, reached
    assert any(depth == 2 for (_, _, depth) in reached), reached

    fact_id = next(f.fact_id for f in facts if f.statement == "Alice works for Acme.")
    hydrated = memory.hydrate([f"fact:{fact_id}"])
    assert hydrated.results[0].text == "Alice works for Acme."
    with pytest.raises(remember.InvalidParameter):
        memory.hydrate(["fact:not-a-uuid"])

    merge = memory.merge_entities(alice, names["Bob"])
    assert "Alice" not in {e.canonical_name for e in memory.entities()}
    memory.unmerge_entities(merge.merge_id)
    assert "Alice" in {e.canonical_name for e in memory.entities()}


def test_with_namespace_shares_the_engine(memory):
    memory.ingest_text("# A\n\nAlice works for Acme.\n", source_ref="a")
    team = memory.with_namespace("team-b")
    assert team.namespace == "team-b"
    assert team.documents() == []
    team.ingest_text("# B\n\nBob works for Globex.\n", source_ref="b")
    assert [d.source_ref for d in team.documents()] == ["b"]
    assert [d.source_ref for d in memory.documents()] == ["a"]
    team.close()
    with pytest.raises(remember.ClosedError):
        team.documents()
    assert len(memory.documents()) == 1
    with pytest.raises(remember.InvalidInput):
        memory.with_namespace("Not A Namespace!")


def test_every_call_of_the_engine_runs_by_name(loaded):
    m = loaded.memory
    names = remember.Memory.methods()
    assert len(names) >= 30 and "facts_context" in names
    assert remember.AsyncMemory.methods() == names
    # Each name reaches its call: a field it does not take is that call's own
    # refusal, not an unknown name.
    for name in names:
        with pytest.raises(remember.RememberError) as refused:
            m.call(name, {"no_such_field": 1})
        assert "unknown method" not in str(refused.value), name
    with pytest.raises(remember.InvalidInput, match="unknown method"):
        m.call("no_such_call")
    with pytest.raises(remember.InvalidInput):
        m.call("search", ["not", "a", "dict"])  # type: ignore[arg-type]
    # The same answer as the named method.
    by_name = m.call("search", {"query": "why did the nightly backup fail?", "k": 3})
    assert by_name.to_dict()["results"] == m.search("why did the nightly backup fail?", k=3).to_dict()["results"]
    assert m.call("status").to_dict().keys() == m.status().to_dict().keys()
    listed = m.call("documents").documents
    assert sorted(d.doc_id for d in listed) == sorted(d.doc_id for d in m.documents())
