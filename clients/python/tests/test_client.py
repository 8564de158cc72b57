"""Tests of the engram Python client against a real ``memctl serve`` (ENGRAM_URL); the Go test
clients/python/python_test.go builds memctl, starts it on a free port and runs these."""

import os
import unittest
import uuid

import engram
from engram import BadRequestError, Client, Memory, NotFoundError

URL = os.environ.get("ENGRAM_URL")


def session() -> str:
    return "py-" + uuid.uuid4().hex[:8]


@unittest.skipUnless(URL, "ENGRAM_URL names no running memctl serve")
class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = Client(URL)

    def test_health_and_openapi(self) -> None:
        self.assertEqual(self.c.health(), {"status": "ok"})
        self.assertIn("/v1/memories/{id}/history", self.c.openapi()["paths"])

    def test_remember_recall_get_list_update_history_delete(self) -> None:
        s = session()
        r = self.c.remember(s, "Alice drinks green tea every morning.", tags=["drinks"], metadata={"confidence": 0.9})
        self.assertEqual(len(r["ids"]), 1)
        self.assertEqual(r["merged"], [False])
        mid = r["ids"][0]
        self.c.remember(s, "Alice's sister lives in Porto.", tags=["family"])
        got = self.c.get(mid)
        self.assertEqual(got["text"], "Alice drinks green tea every morning.")
        self.assertEqual(got["metadata"], {"confidence": 0.9})
        self.assertIsNone(got["last_access"])
        rec = self.c.recall("green tea", s)
        self.assertEqual(rec["results"][0]["id"], mid)
        self.assertTrue(0 < rec["results"][0]["score"]["final"] <= 1)
        rec = self.c.recall("Alice", s, filter={"tags": "family"})
        self.assertEqual([m["tags"] for m in rec["results"]], [["family"]])
        self.assertTrue(self.c.recall("tea", session())["session_empty"])
        page = self.c.list(s, limit=1)
        self.assertEqual(len(page["memories"]), 1)
        self.assertIn("next_cursor", page)
        self.assertEqual(len(list(self.c.iter_memories(s, page_size=1))), 2)
        self.assertEqual(len(self.c.list(s, tags=["drinks"])["memories"]), 1)
        self.assertEqual(len(self.c.list(s, where={"metadata.confidence": {"range": {"gte": 0.5}}})["memories"]), 1)
        up = self.c.update(mid, text="Alice drinks oolong tea every morning.")
        self.assertEqual(up["text"], "Alice drinks oolong tea every morning.")
        self.assertEqual(self.c.recall("oolong", s, mode="keyword")["results"][0]["id"], mid)
        hist = self.c.history(mid)
        self.assertEqual([(v["version"], v["change"], v["memory"]["text"]) for v in hist],
                         [(1, "update", "Alice drinks green tea every morning.")])
        self.assertEqual(self.c.revert(mid, 1)["text"], "Alice drinks green tea every morning.")
        lines = self.c.export({"session": s})
        self.assertEqual(lines[0]["format"], "engram-export")
        self.assertEqual(len(lines), 3)
        self.c.delete(mid)
        with self.assertRaises(NotFoundError) as e:
            self.c.get(mid)
        self.assertIn(mid, str(e.exception))
        with self.assertRaises(NotFoundError):
            self.c.delete(mid)

    def test_merge_keeps_facts(self) -> None:
        s = session()
        a = self.c.remember(s, "Erin is not allergic to peanuts.")
        b = self.c.remember(s, "Erin is allergic to peanuts.")
        self.assertEqual(b["ids"], a["ids"])
        self.assertEqual(b["superseded"], [True])
        hist = self.c.history(a["ids"][0])
        self.assertEqual(hist[0]["change"], "supersede")
        self.assertEqual(hist[0]["memory"]["text"], "Erin is not allergic to peanuts.")

    def test_forget_and_errors(self) -> None:
        s = session()
        mid = self.c.remember(s, "a memory to forget about kites")["ids"][0]
        with self.assertRaises(NotFoundError) as e:
            self.c.forget([mid, "ghost"])
        self.assertIn("ghost", e.exception.message)
        self.assertEqual(self.c.get(mid)["id"], mid)
        self.assertEqual(self.c.forget([mid]), 1)
        with self.assertRaises(NotFoundError):
            self.c.get(mid)
        self.assertEqual([m["id"] for m in self.c.forgotten(s)], [mid])
        self.assertEqual(self.c.restore([mid]), 1)
        self.assertEqual(self.c.get(mid)["text"], "a memory to forget about kites")
        self.assertEqual(self.c.forget(session=s, filter={"source": {"exists": False}}), 1)
        self.assertEqual(self.c.forget([mid], purge=True), 1)
        self.assertEqual(self.c.forgotten(s), [])
        with self.assertRaises(NotFoundError):
            self.c.restore([mid])
        with self.assertRaises(BadRequestError) as e:
            self.c.recall("x", s, filter={"colour": "red"})
        self.assertIn("unknown field", e.exception.message)
        with self.assertRaises(BadRequestError):
            self.c.remember(s, "   ")
        with self.assertRaises(ValueError):
            self.c.recall("x")

    def test_short_term_and_tasks(self) -> None:
        s = session()
        ctx = self.c.add_turn(s, "user", "I land in Osaka on Friday.")
        self.assertEqual(ctx["turns"][-1]["text"], "I land in Osaka on Friday.")
        self.assertEqual(self.c.context(s)["turns"][0]["role"], "user")
        self.c.clear_context(s)
        self.assertEqual(self.c.context(s)["turns"], [])
        t = self.c.start_task("plan the trip", id="trip-" + s, session=s)
        t = self.c.update_step(t["id"], "book", "done", result={"seat": "12A"}, next="pack")
        self.assertEqual(t["next"], "pack")
        self.assertEqual(self.c.finish_task(t["id"])["status"], "done")
        self.assertIn(t["id"], [x["id"] for x in self.c.tasks()])
        self.c.delete_task(t["id"])
        with self.assertRaises(NotFoundError):
            self.c.task(t["id"])
        # Task IDs are per session: the same ID in two sessions is two tasks.
        s2 = session()
        self.c.start_task("first", id="same-" + s, session=s)
        self.c.start_task("second", id="same-" + s, session=s2)
        with self.assertRaises(BadRequestError):
            self.c.task("same-" + s)
        self.assertEqual(self.c.task("same-" + s, session=s2)["goal"], "second")
        t = self.c.update_step("same-" + s, "go", "done", session=s)
        self.assertEqual([x["name"] for x in t["steps"]], ["go"])
        self.assertEqual(self.c.finish_task("same-" + s, session=s2)["status"], "done")
        self.c.delete_task("same-" + s, session=s)
        self.assertEqual(self.c.task("same-" + s)["goal"], "second")

    def test_admin(self) -> None:
        self.assertIn("memories", self.c.stats())
        self.assertTrue(any(x["name"] for x in self.c.sessions()) or self.c.sessions() == [])
        seen = []
        job = self.c.admin("check", progress=seen.append)
        self.assertEqual(job["state"], "done")
        self.assertEqual(seen[-1], job)
        self.assertIn(job["id"], [j["id"] for j in self.c.jobs()])
        started = self.c.admin("check", wait=False)
        self.assertEqual(self.c.wait_job(started["id"])["state"], "done")
        self.assertEqual(self.c.job(started["id"])["state"], "done")


@unittest.skipUnless(URL, "ENGRAM_URL names no running memctl serve")
class Mem0FacadeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.m = Memory(url=URL)

    def test_mem0_flow(self) -> None:
        user = session()
        r = self.m.add([{"role": "system", "content": "be nice"},
                        {"role": "user", "content": "I am vegetarian and I love hiking in the Alps."}],
                       user_id=user, metadata={"category": "food"})
        self.assertEqual([x["event"] for x in r["results"]], ["ADD"])
        mid = r["results"][0]["id"]
        self.m.add("My favourite city is Lisbon.", user_id=user)
        found = self.m.search("hiking", user_id=user, limit=3)["results"]
        self.assertEqual(found[0]["id"], mid)
        self.assertEqual(found[0]["memory"], "I am vegetarian and I love hiking in the Alps.")
        self.assertGreater(found[0]["score"], 0)
        only = self.m.search("hiking Lisbon", user_id=user, filters={"category": "food"})["results"]
        self.assertEqual([x["id"] for x in only], [mid])
        self.assertEqual(len(self.m.get_all(user_id=user)["results"]), 2)
        self.assertEqual(self.m.get(mid)["metadata"], {"category": "food"})
        self.assertIsNone(self.m.get("nope"))
        self.assertEqual(self.m.update(mid, "I am vegan and I love hiking in the Alps.")["message"], "Memory updated successfully!")
        hist = self.m.history(mid)
        self.assertEqual([h["event"] for h in hist], ["ADD", "UPDATE"])
        self.assertEqual(hist[1]["old_memory"], "I am vegetarian and I love hiking in the Alps.")
        self.assertEqual(hist[1]["new_memory"], "I am vegan and I love hiking in the Alps.")
        self.m.delete(mid)
        self.assertIsNone(self.m.get(mid))
        self.m.delete_all(user_id=user)
        self.assertEqual(self.m.get_all(user_id=user)["results"], [])
        with self.assertRaises(ValueError):
            self.m.add("no owner")


class OfflineTest(unittest.TestCase):
    def test_exports_and_typing(self) -> None:
        self.assertEqual(engram.__version__, "0.1.0")
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(engram.__file__), "py.typed")))
        with self.assertRaises(engram.EngramError) as e:
            Client("http://127.0.0.1:9", timeout=2).health()
        self.assertEqual(e.exception.status, 0)


if __name__ == "__main__":
    unittest.main()
