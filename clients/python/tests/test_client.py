"""Tests of the engram Python client against a real ``memctl serve`` (ENGRAM_URL); the Go test
clients/python/python_test.go builds memctl, starts it on a free port and runs these."""

import datetime
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


@unittest.skipUnless(URL, "ENGRAM_URL names no running memctl serve")
class Mem0ScopeTest(unittest.TestCase):
    """mem0's user_id, agent_id and run_id as scopes, and every argument the facade takes,
    against a real server."""

    def setUp(self) -> None:
        self.m = Memory(url=URL)
        self.c = self.m.client

    def test_run_scope_isolation(self) -> None:
        # The quoted bug: search(user_id="alex", run_id="other-run") found a memory added under trip-42.
        user = session()
        self.m.add("I am flying to Lisbon on Friday.", user_id=user, run_id="trip-42", infer=False)
        self.assertEqual(self.m.search("Lisbon", user_id=user, run_id="other-run")["results"], [])
        found = self.m.search("Lisbon", user_id=user, run_id="trip-42")["results"]
        self.assertEqual([x["memory"] for x in found], ["I am flying to Lisbon on Friday."])
        self.assertEqual((found[0]["user_id"], found[0]["run_id"]), (user, "trip-42"))

    def test_scope_isolation(self) -> None:
        user, agent = session(), session()
        text = "The team meets in Lisbon on Friday."
        ids = {}
        for name, scope in {"user": {"user_id": user}, "user+run": {"user_id": user, "run_id": "r1"},
                            "user+agent": {"user_id": user, "agent_id": agent},
                            "user+agent+run": {"user_id": user, "agent_id": agent, "run_id": "r1"},
                            "agent": {"agent_id": agent}, "agent+run": {"agent_id": agent, "run_id": "r1"}}.items():
            r = self.m.add(text, infer=False, **scope)["results"]
            self.assertEqual([x["event"] for x in r], ["ADD"], name)  # the same text in another scope never merges
            ids[name] = r[0]["id"]

        def found(**scope: str) -> set:
            got = {x["id"] for x in self.m.search("Lisbon", **scope)["results"]}
            self.assertEqual(got, {x["id"] for x in self.m.get_all(**scope)["results"]}, scope)
            return got

        self.assertEqual(found(user_id=user), {ids[k] for k in ("user", "user+run", "user+agent", "user+agent+run")})
        self.assertEqual(found(user_id=user, run_id="r1"), {ids["user+run"], ids["user+agent+run"]})
        self.assertEqual(found(user_id=user, agent_id=agent), {ids["user+agent"], ids["user+agent+run"]})
        self.assertEqual(found(user_id=user, agent_id=agent, run_id="r1"), {ids["user+agent+run"]})
        self.assertEqual(found(user_id=user, run_id="r2"), set())
        self.assertEqual(found(agent_id=agent), {ids["agent"], ids["agent+run"]})
        self.assertEqual(found(agent_id=agent, run_id="r1"), {ids["agent+run"]})
        self.assertEqual(found(run_id="r1"), set())  # a run alone is a session of its own
        item = self.m.search("Lisbon", agent_id=agent, run_id="r1")["results"][0]
        self.assertEqual((item["agent_id"], item["run_id"]), (agent, "r1"))
        self.assertNotIn("run_id", item["metadata"])
        # delete_all of a run leaves the rest of the user's memories.
        self.assertEqual(self.m.delete_all(user_id=user, run_id="r1")["message"], "2 memories deleted successfully!")
        self.assertEqual(found(user_id=user), {ids["user"], ids["user+agent"]})
        with self.assertRaises(ValueError):
            self.m.search("Lisbon", user_id="")

    def test_argument_mapping(self) -> None:
        user = session()
        r = self.m.add("I keep bees on the roof.", user_id=user, run_id="r1", infer=False, importance=0.9,
                       time="2024-05-01T10:00:00Z", source="chat", tags=["hobby"], metadata={"mood": "calm"})
        got = self.c.get(r["results"][0]["id"])
        self.assertEqual((got["session"], got["importance"], got["created"], got["source"], got["tags"]),
                         (user, 0.9, "2024-05-01T10:00:00Z", "chat", ["hobby"]))
        self.assertEqual(got["metadata"], {"mood": "calm", "run_id": "r1"})
        when = datetime.datetime(2024, 6, 2, 8, 30, tzinfo=datetime.timezone.utc)
        r = self.m.add({"role": "user", "content": "I started learning the cello."}, user_id=user, infer=False, time=when)
        self.assertEqual(self.c.get(r["results"][0]["id"])["created"], "2024-06-02T08:30:00Z")
        # infer (mem0's default): what the user states, not the small talk or the assistant's boilerplate.
        r = self.m.add([{"role": "system", "content": "be nice"},
                        {"role": "user", "content": "Hi! haha ok. My sister Jenna moved to Denver last week.", "time": "2024-07-01T09:00:00Z"},
                        {"role": "assistant", "content": "Nice to meet you! I'll remember that."},
                        {"role": "user", "content": "thanks lol"}], user_id=user)["results"]
        self.assertEqual([(x["event"], x["memory"]) for x in r], [("ADD", "My sister Jenna moved to Denver last week.")])
        got = self.c.get(r[0]["id"])
        self.assertEqual((got["source"], got["created"]), ("conversation", "2024-07-01T09:00:00Z"))
        self.assertEqual([x["memory"] for x in self.m.search("Denver", user_id=user, threshold=1)["results"]], [])
        self.assertEqual(self.m.search("Denver sister", user_id=user, threshold=0)["results"][0]["id"], r[0]["id"])
        # Arguments the facade does not know are refused, not ignored.
        with self.assertRaises(TypeError) as e:
            self.m.add("x", user_id=user, memory_type="procedural_memory")
        self.assertIn("memory_type", str(e.exception))
        with self.assertRaises(TypeError):
            self.m.search("x", user_id=user, rerank=True)
        with self.assertRaises(TypeError):
            self.m.get_all(user_id=user, version="v1.1")
        with self.assertRaises(ValueError):
            self.m.add([{"role": "user", "content": "x", "name": "alex"}], user_id=user)
        with self.assertRaises(BadRequestError):
            self.m.add("x", user_id=user, importance=2)
        self.assertEqual(len(self.m.get_all(user_id=user)["results"]), 3)

    def test_reset(self) -> None:
        a, b = session(), session()
        ids = [self.m.add("Reset me: the spare key is under the mat.", user_id=a, run_id="r1", infer=False)["results"][0]["id"],
               self.m.add("Reset me: the spare key is under the mat.", user_id=a, infer=False)["results"][0]["id"],
               self.m.add("Reset me too: the bike lock code is 4711.", user_id=b, infer=False)["results"][0]["id"]]
        r = self.m.reset(user_id=a, run_id="r1")
        self.assertEqual((r["forgotten"], r["restorable"]), (1, True))
        self.assertIn("purge_after", r)
        self.assertEqual([x["id"] for x in self.m.get_all(user_id=a)["results"]], [ids[1]])
        r = self.m.reset()  # mem0's reset(): every session the key can reach
        self.assertGreaterEqual(r["forgotten"], 2)
        self.assertEqual(self.m.get_all(user_id=a)["results"] + self.m.get_all(user_id=b)["results"], [])
        trash = {m["id"] for m in self.c.forgotten()}
        self.assertLessEqual(set(ids), trash)
        self.assertEqual(self.c.restore(ids), 3)
        self.assertEqual(len(self.m.get_all(user_id=a)["results"]), 2)
        self.assertEqual(self.m.get(ids[2])["memory"], "Reset me too: the bike lock code is 4711.")

    def test_client_messages_and_distill(self) -> None:
        s = session()
        r = self.c.remember_messages(s, [{"role": "user", "text": "I moved to Porto in March."},
                                         {"role": "assistant", "text": "Got it!"}], infer=True)
        self.assertEqual((r["turns"], [e["memory"] for e in r["events"]]), (2, ["I moved to Porto in March."]))
        self.c.add_turn(s, "user", "I work night shifts at the hospital now.")
        d = self.c.distill(s)
        self.assertEqual([e["memory"] for e in d["events"]], ["I work night shifts at the hospital now."])
        self.assertEqual(self.c.distill(s)["events"], [])
        with self.assertRaises(BadRequestError):
            self.c.remember_messages(s, [{"role": "user", "text": "x"}], user_id="someone-else")


class OfflineTest(unittest.TestCase):
    def test_exports_and_typing(self) -> None:
        self.assertEqual(engram.__version__, "0.1.0")
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(engram.__file__), "py.typed")))
        with self.assertRaises(engram.EngramError) as e:
            Client("http://127.0.0.1:9", timeout=2).health()
        self.assertEqual(e.exception.status, 0)


if __name__ == "__main__":
    unittest.main()
