"""Tests of AsyncClient and AsyncMemory: the behaviours of test_client.py through asyncio against a
real ``memctl serve`` (ENGRAM_URL; ENGRAM_TLS_URL for https with a token), and the transport
(keep-alive, the pool, chunked answers, timeouts, cancellation) against small local servers."""

import asyncio
import gc
import http.server
import inspect
import json
import os
import ssl
import threading
import unittest
import uuid
import warnings
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from engram import (AsyncClient, AsyncMemory, BadRequestError, Client, EngramError, JobFailedError, Memory,
                    NotFoundError, UnauthorizedError)

URL = os.environ.get("ENGRAM_URL")
TLS_URL = os.environ.get("ENGRAM_TLS_URL")
TLS_CA = os.environ.get("ENGRAM_TLS_CA")
TLS_TOKEN = os.environ.get("ENGRAM_TLS_TOKEN")


def session() -> str:
    return "pya-" + uuid.uuid4().hex[:8]


class Case(unittest.IsolatedAsyncioTestCase):
    """A test on its own event loop, in debug mode but without its slow-callback warnings
    (two CPUs shared by many builds make any callback slow now and then)."""

    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().slow_callback_duration = 30.0


@unittest.skipUnless(URL, "ENGRAM_URL names no running memctl serve")
class AsyncClientTest(Case):
    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        self.c = AsyncClient(URL)

    async def asyncTearDown(self) -> None:
        await self.c.aclose()

    async def test_health_and_openapi(self) -> None:
        self.assertEqual(await self.c.health(), {"status": "ok"})
        self.assertIn("/v1/memories/{id}/history", (await self.c.openapi())["paths"])

    async def test_remember_recall_get_list_update_history_delete(self) -> None:
        c, s = self.c, session()
        r = await c.remember(s, "Alice drinks green tea every morning.", tags=["drinks"], metadata={"confidence": 0.9})
        self.assertEqual(len(r["ids"]), 1)
        self.assertEqual(r["merged"], [False])
        mid = r["ids"][0]
        await c.remember(s, "Alice's sister lives in Porto.", tags=["family"])
        got = await c.get(mid)
        self.assertEqual(got["text"], "Alice drinks green tea every morning.")
        self.assertEqual(got["metadata"], {"confidence": 0.9})
        self.assertIsNone(got["last_access"])
        rec = await c.recall("green tea", s)
        self.assertEqual(rec["results"][0]["id"], mid)
        self.assertTrue(0 < rec["results"][0]["score"]["final"] <= 1)
        rec = await c.recall("Alice", s, filter={"tags": "family"})
        self.assertEqual([m["tags"] for m in rec["results"]], [["family"]])
        self.assertTrue((await c.recall("tea", session()))["session_empty"])
        page = await c.list(s, limit=1)
        self.assertEqual(len(page["memories"]), 1)
        self.assertIn("next_cursor", page)
        self.assertEqual(len([m async for m in c.iter_memories(s, page_size=1)]), 2)
        self.assertEqual(len((await c.list(s, tags=["drinks"]))["memories"]), 1)
        self.assertEqual(len((await c.list(s, where={"metadata.confidence": {"range": {"gte": 0.5}}}))["memories"]), 1)
        up = await c.update(mid, text="Alice drinks oolong tea every morning.")
        self.assertEqual(up["text"], "Alice drinks oolong tea every morning.")
        self.assertEqual((await c.recall("oolong", s, mode="keyword"))["results"][0]["id"], mid)
        hist = await c.history(mid)
        self.assertEqual([(v["version"], v["change"], v["memory"]["text"]) for v in hist],
                         [(1, "update", "Alice drinks green tea every morning.")])
        self.assertEqual((await c.revert(mid, 1))["text"], "Alice drinks green tea every morning.")
        lines = await c.export({"session": s})
        self.assertEqual(lines[0]["format"], "engram-export")
        self.assertEqual(len(lines), 3)
        await c.delete(mid)
        with self.assertRaises(NotFoundError) as e:
            await c.get(mid)
        self.assertIn(mid, str(e.exception))
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(NotFoundError):
            await c.delete(mid)

    async def test_merge_keeps_facts(self) -> None:
        s = session()
        a = await self.c.remember(s, "Erin is not allergic to peanuts.")
        b = await self.c.remember(s, "Erin is allergic to peanuts.")
        self.assertEqual(b["ids"], a["ids"])
        self.assertEqual(b["superseded"], [True])
        hist = await self.c.history(a["ids"][0])
        self.assertEqual(hist[0]["change"], "supersede")
        self.assertEqual(hist[0]["memory"]["text"], "Erin is not allergic to peanuts.")

    async def test_forget_restore_and_errors(self) -> None:
        c, s = self.c, session()
        mid = (await c.remember(s, "a memory to forget about kites"))["ids"][0]
        await c.update(mid, text="a memory to forget about red kites")
        with self.assertRaises(NotFoundError) as e:
            await c.forget([mid, "ghost"])
        self.assertIn("ghost", e.exception.message)
        self.assertEqual((await c.get(mid))["id"], mid)
        self.assertEqual(await c.forget([mid]), 1)
        with self.assertRaises(NotFoundError):
            await c.get(mid)
        trash = await c.forgotten(s)
        self.assertEqual([m["id"] for m in trash], [mid])
        self.assertIn("purge_after", trash[0])
        self.assertEqual(await c.restore([mid]), 1)
        self.assertEqual((await c.get(mid))["text"], "a memory to forget about red kites")
        self.assertEqual([v["change"] for v in await c.history(mid)], ["update"])
        with self.assertRaises(NotFoundError):
            await c.restore([mid])
        self.assertEqual(await c.forget(session=s, filter={"source": {"exists": False}}), 1)
        self.assertEqual(await c.forget([mid], purge=True), 1)
        self.assertEqual(await c.forgotten(s), [])
        self.assertIsInstance(await c.purge_forgotten(), int)
        with self.assertRaises(BadRequestError) as e:
            await c.recall("x", s, filter={"colour": "red"})
        self.assertIn("unknown field", e.exception.message)
        self.assertEqual(e.exception.status, 400)
        with self.assertRaises(BadRequestError):
            await c.remember(s, "   ")
        with self.assertRaises(ValueError):
            await c.recall("x")

    async def test_short_term_and_tasks(self) -> None:
        c, s = self.c, session()
        ctx = await c.add_turn(s, "user", "I land in Osaka on Friday.")
        self.assertEqual(ctx["turns"][-1]["text"], "I land in Osaka on Friday.")
        self.assertEqual((await c.context(s))["turns"][0]["role"], "user")
        await c.clear_context(s)
        self.assertEqual((await c.context(s))["turns"], [])
        t = await c.start_task("plan the trip", id="trip-" + s, session=s)
        t = await c.update_step(t["id"], "book", "done", result={"seat": "12A"}, next="pack")
        self.assertEqual(t["next"], "pack")
        self.assertEqual((await c.finish_task(t["id"]))["status"], "done")
        self.assertIn(t["id"], [x["id"] for x in await c.tasks()])
        await c.delete_task(t["id"])
        with self.assertRaises(NotFoundError):
            await c.task(t["id"])
        # Task IDs are per session: the same ID in two sessions is two tasks.
        s2 = session()
        await c.start_task("first", id="same-" + s, session=s)
        await c.start_task("second", id="same-" + s, session=s2)
        with self.assertRaises(BadRequestError):
            await c.task("same-" + s)
        self.assertEqual((await c.task("same-" + s, session=s2))["goal"], "second")
        await c.delete_task("same-" + s, session=s)
        self.assertEqual((await c.task("same-" + s))["goal"], "second")

    async def test_admin_job_with_progress(self) -> None:
        self.assertIn("memories", await self.c.stats())
        self.assertIsInstance(await self.c.sessions(), list)
        seen: List[Dict[str, Any]] = []
        job = await self.c.admin("check", progress=seen.append)
        self.assertEqual(job["state"], "done")
        self.assertEqual(seen[-1], job)
        self.assertTrue(all({"id", "state", "done", "total"} <= set(j) for j in seen))
        self.assertIn(job["id"], [j["id"] for j in await self.c.jobs()])

        async def aprogress(j: Dict[str, Any]) -> None:  # an async callback is awaited
            await asyncio.sleep(0)
            seen.append(j)
        started = await self.c.admin("check", wait=False)
        seen.clear()
        done = await self.c.wait_job(started["id"], progress=aprogress)
        self.assertEqual(done["state"], "done")
        self.assertEqual(seen[-1]["state"], "done")

    async def test_many_concurrent_requests_on_one_client(self) -> None:
        c = AsyncClient(URL, max_connections=4)
        try:
            s = session()
            # Only "kite" in common, among six random words: the built-in embedder's hash collisions
            # keep such pairs far below the 0.85 merge threshold (TestConcurrencyTextsStayApart).
            texts = ["Kite " + " ".join(uuid.uuid4().hex for _ in range(6)) + "." for _ in range(40)]
            answers = await asyncio.gather(*(c.remember(s, t, tags=[f"n{i}"]) for i, t in enumerate(texts)))
            ids = [a["ids"][0] for a in answers]
            self.assertEqual(len(set(ids)), 40)
            got = await asyncio.gather(*(c.get(i) for i in ids))
            self.assertEqual([g["text"] for g in got], texts)  # each answer is its own request's
            recalls = await asyncio.gather(*(c.recall(f"kite {i}", s, filter={"tags": f"n{i}"}) for i in range(40)))
            self.assertEqual([r["results"][0]["id"] for r in recalls], ids)
            self.assertLessEqual(len(c._pool.idle), 4)
            self.assertEqual(len([m async for m in c.iter_memories(s, page_size=7)]), 40)
        finally:
            await c.aclose()

    async def test_cancelled_request_leaves_client_usable(self) -> None:
        c = AsyncClient(URL, max_connections=2)
        try:
            s = session()
            mid = (await c.remember(s, "Dana keeps bees on the roof."))["ids"][0]
            cancelled = 0
            for k in range(30):  # cancel at once, after loop turns, after 1..20 ms: before and during the exchange
                t = asyncio.ensure_future(c.recall("bees", s, k=50))
                for _ in range(k % 10):
                    await asyncio.sleep(0)
                if k >= 10:
                    await asyncio.sleep((k - 9) / 1000)
                t.cancel()
                try:
                    await t
                except asyncio.CancelledError:
                    cancelled += 1
                got = await c.get(mid)
                self.assertEqual(got["id"], mid)
                self.assertEqual((await c.health()), {"status": "ok"})
            self.assertGreater(cancelled, 0)
            self.assertEqual((await c.recall("bees", s))["results"][0]["id"], mid)
        finally:
            await c.aclose()

    async def test_timeout_and_unreachable(self) -> None:
        with self.assertRaises(EngramError) as e:
            await AsyncClient("http://127.0.0.1:9", timeout=2).health()
        self.assertEqual(e.exception.status, 0)
        self.assertIn("cannot reach", e.exception.message)


@unittest.skipUnless(URL, "ENGRAM_URL names no running memctl serve")
class AsyncMem0FacadeTest(Case):
    async def test_mem0_flow(self) -> None:
        async with AsyncMemory(url=URL) as m:
            user = session()
            r = await m.add([{"role": "system", "content": "be nice"},
                             {"role": "user", "content": "I am vegetarian and I love hiking in the Alps."}],
                            user_id=user, metadata={"category": "food"})
            self.assertEqual([x["event"] for x in r["results"]], ["ADD"])
            mid = r["results"][0]["id"]
            await m.add("My favourite city is Lisbon.", user_id=user)
            found = (await m.search("hiking", user_id=user, limit=3))["results"]
            self.assertEqual(found[0]["id"], mid)
            self.assertEqual(found[0]["memory"], "I am vegetarian and I love hiking in the Alps.")
            self.assertGreater(found[0]["score"], 0)
            only = (await m.search("hiking Lisbon", user_id=user, filters={"category": "food"}))["results"]
            self.assertEqual([x["id"] for x in only], [mid])
            self.assertEqual(len((await m.get_all(user_id=user))["results"]), 2)
            self.assertEqual(len((await m.get_all(user_id=user, limit=1))["results"]), 1)
            self.assertEqual((await m.get(mid))["metadata"], {"category": "food"})
            self.assertIsNone(await m.get("nope"))
            self.assertEqual((await m.update(mid, "I am vegan and I love hiking in the Alps."))["message"],
                             "Memory updated successfully!")
            hist = await m.history(mid)
            self.assertEqual([h["event"] for h in hist], ["ADD", "UPDATE"])
            self.assertEqual(hist[1]["old_memory"], "I am vegetarian and I love hiking in the Alps.")
            self.assertEqual(hist[1]["new_memory"], "I am vegan and I love hiking in the Alps.")
            await m.delete(mid)
            self.assertIsNone(await m.get(mid))
            await m.delete_all(agent_id=user)
            self.assertEqual((await m.get_all(run_id=user))["results"], [])
            with self.assertRaises(ValueError):
                await m.add("no owner")
            self.assertEqual((await m.reset(user_id=user))["forgotten"], 0)

    async def test_shared_client_and_concurrent_users(self) -> None:
        async with AsyncClient(URL) as c:
            m = AsyncMemory(client=c)
            users = [session() for _ in range(8)]
            await asyncio.gather(*(m.add(f"{u} collects stamps from Peru.", user_id=u, infer=False) for u in users))
            found = await asyncio.gather(*(m.search("stamps", user_id=u) for u in users))
            self.assertEqual([f["results"][0]["memory"] for f in found], [f"{u} collects stamps from Peru." for u in users])
            await m.aclose()  # not its client: stays open
            self.assertEqual(await c.health(), {"status": "ok"})


@unittest.skipUnless(TLS_URL and TLS_CA and TLS_TOKEN, "ENGRAM_TLS_URL names no memctl serve over https with a token")
class TLSTokenTest(Case):
    """https with the server's self-signed certificate, and a bearer token, both clients."""

    async def test_https_and_token(self) -> None:
        ctx = ssl.create_default_context(cafile=TLS_CA)
        async with AsyncClient(TLS_URL, token=TLS_TOKEN, ssl_context=ctx) as c:
            s = session()
            mid = (await c.remember(s, "The vault code is in the blue notebook."))["ids"][0]
            self.assertEqual((await c.recall("vault code", s))["results"][0]["id"], mid)
            self.assertEqual(len(await asyncio.gather(*(c.get(mid) for _ in range(10)))), 10)
        sync = Client(TLS_URL, token=TLS_TOKEN, ssl_context=ctx)
        self.assertEqual(sync.get(mid)["id"], mid)
        async with AsyncClient(TLS_URL, ssl_context=ctx) as anon:
            with self.assertRaises(UnauthorizedError) as e:
                await anon.get(mid)
            self.assertEqual(e.exception.status, 401)
        with self.assertRaises(UnauthorizedError):
            Client(TLS_URL, ssl_context=ctx).get(mid)
        async with AsyncClient(TLS_URL, token=TLS_TOKEN) as unverified:  # the system's CAs do not know it
            with self.assertRaises(EngramError) as e:
                await unverified.health()
            self.assertEqual(e.exception.status, 0)
            self.assertIn("CERTIFICATE_VERIFY_FAILED", e.exception.message)
        async with AsyncMemory(client=AsyncClient(TLS_URL, token=TLS_TOKEN, ssl_context=ctx)) as m:
            self.assertEqual((await m.get(mid))["id"], mid)
            await m.client.aclose()


# -- the transport, against local servers --------------------------------------------------------

Handler = Callable[[str, str, Dict[str, str], bytes], Awaitable[Optional[bytes]]]


def answer(status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    h = {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    return head.encode() + data


class FakeServer:
    """An HTTP/1.1 server on the test's loop: handler answers each request with bytes, or None
    to answer nothing and wait for the client to close (counted in ``aborted``)."""

    def __init__(self, handler: Handler, close_after_answer: bool = False, drop_second: bool = False) -> None:
        self.handler = handler
        self.close_after_answer = close_after_answer
        self.drop_second = drop_second  # close a connection when its second request arrives, unanswered
        self.connections = 0
        self.requests: List[Tuple[str, str, Dict[str, str], bytes]] = []
        self.aborted = 0
        self.aborted_event = asyncio.Event()
        self.received = asyncio.Event()

    async def __aenter__(self) -> "FakeServer":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = "http://127.0.0.1:%d" % self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            for n in range(1 << 30):
                line = await reader.readline()
                if not line or (self.drop_second and n == 1):
                    return
                method, target, _ = line.decode().split(" ", 2)
                headers = {}
                while True:
                    h = await reader.readline()
                    if h == b"\r\n":
                        break
                    k, _, v = h.decode().partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((method, target, headers, body))
                self.received.set()
                out = await self.handler(method, target, headers, body)
                if out is None:
                    await reader.read()  # until the client closes
                    self.aborted += 1
                    self.aborted_event.set()
                    return
                writer.write(out)
                await writer.drain()
                if self.close_after_answer:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()


async def echo(method: str, target: str, headers: Dict[str, str], body: bytes) -> Optional[bytes]:
    if target.startswith("/hang"):
        return None
    if target.startswith("/slow"):
        await asyncio.sleep(0.01)
    return answer(200, {"method": method, "target": target, "body": body.decode()})


class TransportTest(Case):
    async def test_keep_alive_and_headers(self) -> None:
        async with FakeServer(echo) as srv, AsyncClient(srv.url + "/base/", token="sekrit") as c:
            for i in range(10):
                got = await c.request("GET", f"/x/{i}", query={"q": ["a b", True]})
                self.assertEqual(got["target"], f"/base/x/{i}?q=a+b&q=true")
            self.assertEqual(srv.connections, 1)
            self.assertEqual((await c.request("POST", "/p"))["body"], "{}")
            self.assertEqual((await c.request("PATCH", "/p", {"a": "é"}))["body"], '{"a": "\\u00e9"}')
            _, _, h, _ = srv.requests[-1]
            self.assertEqual(h["authorization"], "Bearer sekrit")
            self.assertEqual(h["host"], srv.url[len("http://"):])
            self.assertEqual(h["content-type"], "application/json")
            self.assertTrue(h["user-agent"].startswith("engram-python/"))
            self.assertNotIn("content-length", srv.requests[0][2])  # a GET sends no body

    async def test_pool_bounds_connections(self) -> None:
        async with FakeServer(echo) as srv, AsyncClient(srv.url, max_connections=3) as c:
            got = await asyncio.gather(*(c.request("GET", f"/slow/{i}") for i in range(30)))
            self.assertEqual([g["target"] for g in got], [f"/slow/{i}" for i in range(30)])
            self.assertLessEqual(srv.connections, 3)
            self.assertLessEqual(len(c._pool.idle), 3)

    async def test_chunked_answer_with_trailers(self) -> None:
        async def chunked(*_: Any) -> bytes:
            parts = [b'{"memories": [', b'{"id": "a"}, ', b'{"id": "b"}', b"]}"]
            body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts)
            return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + body + b"0\r\nEngram-Count: 2\r\n\r\n")
        async with FakeServer(chunked) as srv, AsyncClient(srv.url) as c:
            for _ in range(3):
                self.assertEqual(await c.archive(), [{"id": "a"}, {"id": "b"}])
            self.assertEqual(srv.connections, 1)

    async def test_server_closing_idle_connections(self) -> None:
        async with FakeServer(echo, close_after_answer=True) as srv, AsyncClient(srv.url) as c:
            for i in range(5):  # each answer's connection is gone by the next request
                self.assertEqual((await c.request("GET", f"/{i}"))["target"], f"/{i}")
            self.assertEqual(srv.connections, 5)

    async def test_stale_connection_resends_reads_only(self) -> None:
        async with FakeServer(echo, drop_second=True) as srv, AsyncClient(srv.url) as c:
            self.assertEqual((await c.request("GET", "/1"))["target"], "/1")
            self.assertEqual((await c.request("GET", "/2"))["target"], "/2")  # dropped, then sent again
            self.assertEqual(srv.connections, 2)
            with self.assertRaises(EngramError) as e:  # a write is not sent twice
                await c.request("POST", "/3")
            self.assertEqual(e.exception.status, 0)
            self.assertIn("closed the connection without answering", e.exception.message)
            self.assertEqual([r[1] for r in srv.requests], ["/1", "/2"])
            self.assertEqual((await c.request("POST", "/4"))["target"], "/4")

    async def test_connection_close_and_body_to_eof(self) -> None:
        async def close(*_: Any) -> bytes:
            return b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"ok": true}'
        srv = FakeServer(close, close_after_answer=True)
        async with srv, AsyncClient(srv.url) as c:
            self.assertEqual(await c.request("GET", "/"), {"ok": True})
            self.assertEqual(await c.request("GET", "/"), {"ok": True})
            self.assertEqual(c._pool.idle, [])

    async def test_errors_carry_status_and_message(self) -> None:
        async def fail(method: str, target: str, *_: Any) -> bytes:
            if target.startswith("/v1/memories/"):
                return answer(404, {"error": "memory: no memory with ID \"x\""})
            if target == "/v1/remember":
                return answer(500, {"error": "disk full", "stored_ids": ["a"]})
            if target == "/v1/admin/check":
                return answer(202, {"id": "j1", "state": "running"})
            if target == "/v1/jobs/j1":
                return answer(200, {"id": "j1", "state": "failed", "error": "corrupt segment"})
            return answer(502, b"bad gateway\n", {"Content-Type": "text/plain"})
        async with FakeServer(fail) as srv, AsyncClient(srv.url) as c:
            with self.assertRaises(NotFoundError) as e:
                await c.get("x")
            self.assertEqual((e.exception.status, e.exception.message), (404, 'memory: no memory with ID "x"'))
            self.assertEqual(str(e.exception), 'GET /v1/memories/x: 404: memory: no memory with ID "x"')
            with self.assertRaises(EngramError) as e:
                await c.remember("s", "t")
            self.assertEqual((e.exception.status, e.exception.body), (500, {"error": "disk full", "stored_ids": ["a"]}))
            with self.assertRaises(EngramError) as e:
                await c.health()
            self.assertEqual((e.exception.status, e.exception.message), (502, "bad gateway"))
            with self.assertRaises(JobFailedError) as e:
                await c.admin("check", poll=0.001)
            self.assertEqual(e.exception.message, "corrupt segment")
            self.assertEqual(e.exception.job["state"], "failed")
        # The sync client raises the same.
        srv = ThreadedServer()
        try:
            with self.assertRaises(NotFoundError) as e:
                Client(srv.url).get("x")
            self.assertEqual((e.exception.status, e.exception.message), (404, "no x"))
        finally:
            srv.close()

    async def test_timeout_aborts_the_request(self) -> None:
        async with FakeServer(echo) as srv, AsyncClient(srv.url, timeout=1.0) as c:
            with self.assertRaises(EngramError) as e:
                await c.request("GET", "/hang")
            self.assertEqual(e.exception.status, 0)
            self.assertIn("no answer", e.exception.message)
            await asyncio.wait_for(srv.aborted_event.wait(), 5)  # the server saw the connection close
            self.assertEqual((await c.request("GET", "/ok"))["target"], "/ok")

    async def test_cancel_aborts_the_request_and_the_client_goes_on(self) -> None:
        async with FakeServer(echo) as srv, AsyncClient(srv.url, max_connections=1) as c:
            await c.request("GET", "/warm")
            srv.received.clear()
            t = asyncio.ensure_future(c.request("POST", "/hang", {"big": "x" * 100000}))
            await asyncio.wait_for(srv.received.wait(), 5)
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
            await asyncio.wait_for(srv.aborted_event.wait(), 5)
            self.assertEqual(srv.aborted, 1)
            # The slot came back (max_connections=1) and the next answer is the next request's.
            self.assertEqual((await c.request("GET", "/after"))["target"], "/after")
            self.assertEqual(srv.connections, 2)

    async def test_cancel_mid_answer_does_not_reuse_the_connection(self) -> None:
        async def half(method: str, target: str, *_: Any) -> Optional[bytes]:
            if target == "/half":
                return b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"partial": '
            return answer(200, {"target": target})
        async with FakeServer(half) as srv, AsyncClient(srv.url, max_connections=1) as c:
            t = asyncio.ensure_future(c.request("GET", "/half"))
            await asyncio.wait_for(srv.received.wait(), 5)
            await asyncio.sleep(0.05)
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
            self.assertEqual(await c.request("GET", "/next"), {"target": "/next"})
            self.assertEqual(srv.connections, 2)

    async def test_abandoned_job_wait_cancels_the_job(self) -> None:
        async def jobs(method: str, target: str, *_: Any) -> bytes:
            if target == "/v1/admin/compact":
                return answer(202, {"id": "j9", "state": "running", "done": 0, "total": 10})
            if target == "/v1/jobs/j9/cancel":
                return answer(200, {"id": "j9", "state": "running", "cancel_requested": True})
            return answer(200, {"id": "j9", "state": "running", "done": 3, "total": 10})
        async with FakeServer(jobs) as srv, AsyncClient(srv.url) as c:
            seen: List[Dict[str, Any]] = []
            t = asyncio.ensure_future(c.admin("compact", poll=0.01, progress=seen.append))
            while len(seen) < 3:
                await asyncio.sleep(0.01)
            t.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await t
            self.assertEqual([r[:2] for r in srv.requests[-1:]], [("POST", "/v1/jobs/j9/cancel")])
            self.assertEqual(seen[1]["done"], 3)
            with self.assertRaises(EngramError) as e:  # a wait's own timeout leaves the job alone
                await c.admin("compact", poll=0.01, timeout=0.05)
            self.assertIn("still running", e.exception.message)
            self.assertEqual(srv.requests[-1][1], "/v1/jobs/j9")

    async def test_unreachable_and_bad_urls(self) -> None:
        with self.assertRaises(EngramError) as e:
            await AsyncClient("http://127.0.0.1:9", timeout=2).health()
        self.assertEqual(e.exception.status, 0)
        with self.assertRaises(ValueError):
            AsyncClient("ftp://example.com")
        with self.assertRaises(ValueError):
            await AsyncClient("http://127.0.0.1:9", token="a\r\nX-Evil: 1").health()


class ThreadedServer:
    """A blocking HTTP/1.1 server in a thread (for the sync client, and for an AsyncClient that
    outlives its event loop)."""

    def __init__(self) -> None:
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                body = json.dumps({"error": "no x"} if self.path.startswith("/v1/memories/") else {"path": self.path}).encode()
                self.send_response(404 if self.path.startswith("/v1/memories/") else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class LoopsAndSurfaceTest(unittest.TestCase):
    def test_one_client_across_event_loops(self) -> None:
        srv = ThreadedServer()
        try:
            c = AsyncClient(srv.url, max_connections=2)

            async def use(i: int, close: bool) -> Any:
                got = await asyncio.gather(*(c.request("GET", f"/{i}/{j}") for j in range(4)))
                if close:
                    await c.aclose()
                return [g["path"] for g in got]
            for i in range(3):  # each asyncio.run is a new loop: the pool and its slots start afresh
                self.assertEqual(asyncio.run(use(i, close=True)), [f"/{i}/{j}" for j in range(4)])
            with warnings.catch_warnings():  # connections left open by a loop that ended
                warnings.simplefilter("ignore", ResourceWarning)
                asyncio.run(use(3, close=False))
                self.assertEqual(asyncio.run(use(4, close=True)), [f"/4/{j}" for j in range(4)])
                gc.collect()
        finally:
            srv.close()

    def test_same_surface_sync_and_async(self) -> None:
        for sync_cls, async_cls in ((Client, AsyncClient), (Memory, AsyncMemory)):
            names = {n for n in dir(sync_cls) if not n.startswith("_") and callable(getattr(sync_cls, n))}
            anames = {n for n in dir(async_cls) if not n.startswith("_") and callable(getattr(async_cls, n))}
            self.assertEqual(names - {"close"}, anames - {"aclose"}, async_cls.__name__)
            for n in names - {"close"}:
                s, a = getattr(sync_cls, n), getattr(async_cls, n)
                self.assertEqual(inspect.signature(s).parameters, inspect.signature(a).parameters, n)
                self.assertEqual(s.__doc__, a.__doc__, n)
                if n == "iter_memories":
                    self.assertTrue(inspect.isasyncgen(a(AsyncClient(), "s")), n)
                else:
                    self.assertTrue(inspect.iscoroutinefunction(a), n)


if __name__ == "__main__":
    unittest.main()
