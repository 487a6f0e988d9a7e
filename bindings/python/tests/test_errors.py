"""Errors: one exception class per engine code; bad input raises and changes nothing."""

import re

import pytest

import remember
from conftest import REPO


def engine_codes():
    source = (REPO / "crates" / "rememberstack-core" / "src" / "error.rs").read_text()
    body = source[source.index("pub fn as_str") :]
    body = body[: body.index("\n    }\n")]
    return re.findall(r'ErrorCode::\w+ => "(\w+)"', body)


def test_every_engine_code_has_its_class():
    codes = engine_codes()
    assert len(codes) >= 19
    for code in codes:
        cls = remember.ERRORS[code]
        assert issubclass(cls, remember.RememberError)
        assert cls.code == code
        err = cls("boom")
        assert err.code == code and str(err) == "boom"
    assert set(remember.ERRORS) == set(codes) | {"closed"}
    assert issubclass(remember.DocumentNotFound, remember.NotFound)
    assert issubclass(remember.InvalidParameter, remember.InvalidInput)
    assert issubclass(remember.InvalidInput, ValueError)
    assert issubclass(remember.ClosedError, remember.RememberError)


def test_bad_kind_is_invalid_input_and_changes_nothing(memory, tmp_path):
    with pytest.raises(remember.InvalidInput) as e:
        memory.ingest_text("Some text.", source_ref="notes/a", kind="pdfx")
    assert e.value.code == "invalid_input"
    assert "pdfx" in e.value.message
    f = tmp_path / "a.md"
    f.write_text("# A\n\nText.\n")
    with pytest.raises(remember.InvalidInput):
        memory.ingest_file(f, kind="spreadsheet")
    with pytest.raises(remember.InvalidInput):
        memory.ingest_file(f, mode="sometimes")
    with pytest.raises(remember.InvalidInput):
        memory.ingest_file(f, source_time="yesterday")
    assert memory.documents() == []
    assert memory.process_until_idle().completed == 0


def test_unknown_operation_and_invalid_parameters(memory):
    with pytest.raises(remember.NotFound) as e:
        memory.run_operation("summon_answers", {"query": "x"})
    assert e.value.code == "not_found"
    with pytest.raises(remember.InvalidParameter) as e:
        memory.run_operation("combined_context", {"query": "x", "k": 3})
    assert e.value.code == "invalid_parameter"
    with pytest.raises(remember.InvalidParameter):
        memory.combined_context("x", k=3)
    with pytest.raises(remember.InvalidParameter):
        memory.claims_and_sources_context("x", k=0)
    with pytest.raises(remember.InvalidParameter):
        memory.facts_context("x", temporal_scope="someday")
    with pytest.raises(remember.InvalidParameter):
        memory.run_operation("combined_context", ["not", "a", "dict"])
    with pytest.raises(remember.InvalidParameter):
        memory.run_operation("resolve_entity", {"name": ""})


def test_wrong_python_types_raise_typed_errors(memory):
    with pytest.raises(remember.InvalidInput) as e:
        memory.ingest_text(123, source_ref="notes/a")
    assert e.value.code == "invalid_input"
    with pytest.raises(remember.InvalidInput):
        memory.ingest_text("text", source_ref=["a", "list"])
    with pytest.raises(remember.InvalidInput):
        memory.search("backup", k="ten")
    with pytest.raises(remember.InvalidInput):
        memory.search("backup", no_such_filter=True)
    with pytest.raises(remember.InvalidInput):
        memory.search("backup", k=object())
    with pytest.raises(remember.InvalidInput):
        memory.ingest_file(42)
    with pytest.raises(remember.InvalidInput):
        memory.trace("not-a-uuid")
    with pytest.raises(remember.InvalidInput):
        memory.promote_note("not-a-uuid", 1)
    with pytest.raises(remember.InvalidInput):
        memory.promote_note("123e4567-e89b-12d3-a456-426614174000", -1)
    with pytest.raises(remember.InvalidConversation) as e:
        memory.ingest_conversation({"messages": "nope"}, source_ref="chat/x")
    assert e.value.code == "invalid_conversation"
    with pytest.raises(remember.InvalidConversation):
        memory.append_messages("chat/x", {"speaker": "A", "text": "not a list"})
    with pytest.raises(remember.InvalidInput):
        memory.ingest_text("needs a lineage")
    with pytest.raises(remember.InvalidInput):
        remember.Memory(namespace=7)
    with pytest.raises(remember.InvalidInput):
        remember.Memory(config="not a dict")
    assert memory.documents() == []


def test_not_found(memory):
    missing = "123e4567-e89b-12d3-a456-426614174000"
    for call in (memory.delete_document, memory.forget_document, memory.document):
        with pytest.raises(remember.DocumentNotFound) as e:
            call(missing)
        assert e.value.code == "document_not_found"
        assert isinstance(e.value, LookupError)
    with pytest.raises(remember.NotFound):
        memory.trace(missing)
    with pytest.raises(remember.NotFound):
        memory.ingest_file("/no/such/file.md")


def test_closed_memory_raises(db):
    m = remember.Memory(db)
    m.ingest_text("Before closing.", source_ref="notes/c")
    m.close()
    assert m.closed
    with pytest.raises(remember.ClosedError) as e:
        m.search("closing")
    assert e.value.code == "closed"
    with pytest.raises(remember.ClosedError):
        m.process_until_idle()
    with pytest.raises(remember.ClosedError):
        m.namespace
    m.close()  # twice is harmless
    with remember.Memory(db) as again:
        assert len(again.documents()) == 1
    assert again.closed
    with pytest.raises(remember.ClosedError):
        again.documents()


def test_unserializable_arguments(memory):
    with pytest.raises(remember.InvalidParameter):
        memory.run_operation("claims_and_sources_context", {"query": "x", "k": float("nan")})
    with pytest.raises(remember.InvalidParameter):
        memory.combined_context("x", entity_ids=[object()])
    import datetime

    with pytest.raises(remember.InvalidInput):
        memory.ingest_text("t", source_ref="n", source_time=datetime.datetime(2024, 1, 1))
    assert memory.ingest_text(
        "t", source_ref="n", source_time=datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    ).outcome == "created"
