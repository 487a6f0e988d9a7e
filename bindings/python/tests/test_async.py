"""AsyncMemory: the same engine, as coroutines."""

import asyncio

import pytest

import remember


def test_async_api(db, conversation):
    async def main():
        async with remember.AsyncMemory(db) as m:
            doc = await m.ingest_text(
                "# Plan\n\nVersion 2.0 ships on 14 March with the new sync engine.\n",
                source_ref="notes/plan",
            )
            conv = await m.ingest_conversation(conversation, source_ref="samples/standup")
            report = await m.process_until_idle()
            assert report.completed > 0
            # Calls run concurrently without blocking the loop.
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            t = asyncio.ensure_future(ticker())
            a, b, bundle = await asyncio.gather(
                m.search("when does version 2.0 ship?"),
                m.search("backup quota"),
                m.combined_context("why did the nightly backup fail?"),
            )
            t.cancel()
            assert ticks > 0
            assert doc.document_id in [r.document_id for r in a.results]
            assert conv.document_id in [r.document_id for r in b.results]
            assert bundle.contract == "ContextBundle/v2"
            assert bundle.claims_and_sources.results
            with pytest.raises(remember.DocumentNotFound):
                await m.delete_document("123e4567-e89b-12d3-a456-426614174000")
            with pytest.raises(remember.NotFound):
                await m.run_operation("nope", {})
            docs = await m.documents()
            assert len(docs) == 2
        assert m.closed
        with pytest.raises(remember.ClosedError):
            await m.search("anything")
        opened = await remember.AsyncMemory.open(db)
        assert len(await opened.documents()) == 2
        await opened.aclose()

    asyncio.run(main())
