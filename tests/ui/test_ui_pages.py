"""Every /ui/ page through the real app: what it shows, within the caller's trust and allowlist,
and hostile memory text rendered escaped."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from api_kit import IN_STORE, TOKENS, App, make_app
from markupsafe import escape
from ui_kit import SESSION, converse, propose

from lobug import keys

FACT = "The user's sister Ana lives in Lisbon."
SHOWN = str(escape(FACT))  # as a page shows it: Jinja2 escapes the apostrophe too
HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)> & "quotes"'


async def page(app: App, path: str, status: int = 200, **kw: Any) -> str:
    resp = await app.client.get(path, **kw)
    html = await resp.text()
    assert resp.status == status, (path, resp.status, html[:500])
    assert resp.content_type == "text/html"
    return html


async def seeded(make_client: Callable[..., Any]) -> tuple[App, int, int]:
    app = await make_app(make_client)
    fact = await app.remember(FACT, category="relationships", importance=0.8)
    summary = await app.remember("They talked about Ana's move to Lisbon.", kind="summary")
    memory = app.client.app[keys.MEMORY]
    await app.client.app[keys.DB].write(
        partial(
            converse,
            now=memory.clock(),
            said="my sister Ana moved to Lisbon",
            summary_id=summary["id"],
        ),  # fmt: skip
        fact["id"],
    )
    return app, fact["id"], summary["id"]


async def test_home_shows_counts_health_and_queue(make_client: Callable[..., Any]) -> None:
    app, _, _ = await seeded(make_client)
    await app.remember("The user reflects that family matters most.", kind="reflection")
    html = await page(app, "/ui/")
    assert "Base memory" in html and "Health and queue" in html
    assert "The user reflects that family matters most." in html
    assert "<dt>Memories</dt><dd>3</dd>" in html and "<dt>Conversations</dt><dd>1</dd>" in html
    assert "http-equiv" not in html and "cdn" not in html.lower()
    resp = await app.client.get("/ui")
    assert resp.status == 200 and str(resp.url).endswith("/ui/")


async def test_facts_by_category_with_strength_and_filters(
    make_client: Callable[..., Any],
) -> None:
    app, fact_id, _ = await seeded(make_client)
    await app.remember("The user likes green tea.", category="preferences")
    html = await page(app, "/ui/facts")
    assert "<h2>relationships</h2>" in html and "<h2>preferences</h2>" in html
    assert f'href="/ui/memories/{fact_id}"' in html and "0.80" in html and "% ·" in html
    only = await page(app, "/ui/facts?category=preferences&layer=&store=")
    assert "green tea" in only and SHOWN not in only
    text = await page(app, "/ui/facts?q=sister&status=all")
    assert SHOWN in text and "green tea" not in text
    assert "must be one of" in await page(app, "/ui/facts?layer=deep", 400)


async def test_search_explains_each_score(make_client: Callable[..., Any]) -> None:
    app, fact_id, _ = await seeded(make_client)
    html = await page(app, "/ui/search?q=where+does+Ana+live&k=5&kind=fact")
    assert f'href="/ui/memories/{fact_id}"' in html
    assert "How the score was made" in html and '<th scope="row">final</th>' in html
    assert "found" not in await page(app, "/ui/search")  # no query: just the form


async def test_memory_page_sources_entities_history(make_client: Callable[..., Any]) -> None:
    app, fact_id, _ = await seeded(make_client)
    html = await page(app, f"/ui/memories/{fact_id}")
    assert SHOWN in html and "my sister Ana moved to Lisbon" in html
    assert f'href="/ui/conversations/{SESSION}"' in html
    assert 'href="/ui/entities/' in html and "Casa Azul" in html
    assert "ADD" in html  # its history
    etag = (await app.local.get(f"/v1/memories/{fact_id}"))["etag"]
    assert f'name="etag" value="{etag}"' in html
    await page(app, "/ui/memories/999999", 404)
    await page(app, "/ui/memories/abc", 404)
    purge = await page(app, f"/ui/memories/{fact_id}/purge")
    assert "Type <strong>purge</strong> to confirm" in purge


async def test_conversations_with_summaries(make_client: Callable[..., Any]) -> None:
    app, _, summary_id = await seeded(make_client)
    html = await page(app, "/ui/conversations")
    assert f'href="/ui/conversations/{SESSION}"' in html
    assert "They talked about Ana&#39;s move to Lisbon." in html
    one = await page(app, f"/ui/conversations/{SESSION}")
    assert "my sister Ana moved to Lisbon" in one and f"/ui/memories/{summary_id}" in one
    await page(app, "/ui/conversations/nope", 404)


async def test_entities_and_their_memories(make_client: Callable[..., Any]) -> None:
    app, _, _ = await seeded(make_client)
    listing = await page(app, "/ui/entities?q=the+capital")
    entity_id = app.value("SELECT id FROM entities WHERE canonical_name = 'Casa Azul'")
    assert f'href="/ui/entities/{entity_id}"' in listing
    html = await page(app, f"/ui/entities/{entity_id}")
    assert SHOWN in html and "Also: the capital" in html
    await page(app, "/ui/entities/424242", 404)


async def test_proposals_listed(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    config, memory = app.client.app[keys.CONFIG], app.client.app[keys.MEMORY]
    await app.client.app[keys.DB].write(
        partial(propose, config=config, now=memory.clock()), ["The user's name is Sam."]
    )
    html = await page(app, "/ui/proposals")
    assert "The user&#39;s name is Sam." in html and "Accept" in html


async def test_hostile_text_is_escaped_everywhere(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    created = await app.remember(HOSTILE, category="preferences")
    escaped = (
        "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    )
    for path in (f"/ui/memories/{created['id']}", "/ui/facts?category=preferences",
                 "/ui/search?q=pwned+alert", f"/ui/memories/{created['id']}/purge"):  # fmt: skip
        html = await page(app, path)
        assert escaped in html, path
        assert "<script>alert" not in html and "<img src=x" not in html
    reflected = await page(app, "/ui/facts?q=%3Cscript%3Ex%3C/script%3E")
    assert "<script>x</script>" not in reflected and "&lt;script&gt;x" in reflected
    resp = await app.client.get("/ui/")
    assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
    assert resp.headers["X-Frame-Options"] == "DENY"


async def test_trust_and_allowlists_apply_as_on_v1(make_client: Callable[..., Any]) -> None:
    app, fact_id, _ = await seeded(make_client)
    social = await app.remember(IN_STORE["social"], store="social", category="preferences")
    familiar = {"Authorization": f"Bearer {TOKENS['familiar']}"}
    # The familiar token reads only the social store: the private fact is missing (404, as
    # on /v1), conversations are closed, and it sees the social memory.
    await page(app, f"/ui/memories/{fact_id}", 404, headers=familiar)
    facts = await page(app, "/ui/facts?kind=fact", headers=familiar)
    assert SHOWN not in facts
    assert "private store, which this token cannot read" in await page(
        app, "/ui/conversations", headers=familiar
    )
    public = {"Authorization": f"Bearer {TOKENS['public']}"}
    assert IN_STORE["social"] not in await page(app, "/ui/facts", headers=public)
    assert "Only a full-trust caller" in await page(app, "/ui/", headers=public)
    full = await page(app, f"/ui/memories/{social['id']}", headers=familiar)
    assert IN_STORE["social"] in full and "private store, which this token cannot read" in full
