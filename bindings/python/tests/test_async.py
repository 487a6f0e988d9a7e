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
            # Any call by its name, as a coroutine.
            by_name = await m.call("search", {"query": "backup quota"})
            assert [r["chunk_id"] for r in by_name.to_dict()["results"]] == [
                r["chunk_id"] for r in b.to_dict()["results"]
            ]
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


def test_the_engine_releases_the_gil(db):
    """While the engine works in a worker thread, the event loop keeps running."""
    text = "\n\n".join(
        f"## Section {i}\n\nTeam {i} moved server rack {i} to room {i * 3} on Tuesday."
        for i in range(120)
    )

    async def main():
        async with remember.AsyncMemory(db) as m:
            await m.ingest_text(text, source_ref="notes/racks")
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            t = asyncio.ensure_future(ticker())
            loop = asyncio.get_running_loop()
            start = loop.time()
            report = await m.process_until_idle()
            elapsed = loop.time() - start
            t.cancel()
            assert report.completed > 0
            # Held, the GIL would stop the loop for the whole call (a few ticks at
            # most); released, the loop spins freely (~10^5 ticks a second).
            assert ticks / max(elapsed, 1e-3) > 5000, (ticks, elapsed)

    asyncio.run(main())
