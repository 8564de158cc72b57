"""A mem0-style facade: ``Memory`` (and ``AsyncMemory``) with add, search, get_all, get, update,
delete, delete_all, history and reset.

The shapes follow mem0's ``Memory`` (results under ``"results"``, a memory as
``{"id", "memory", "metadata", "created_at", "updated_at", ...}``, add's events as
``{"id", "memory", "event": "ADD"}``, history events with ``old_memory``, ``new_memory`` and
``event``), so code written for mem0 ports with few changes:

- ``user_id``, ``agent_id`` and ``run_id`` are scopes as in mem0. The engram session is the
  user_id, else the agent_id, else the run_id; the others are kept on each memory (metadata
  ``agent_id`` and ``run_id``), and search, get_all, delete_all and reset select exactly the
  memories of the scope given: ``search(user_id="alex", run_id="other-run")`` finds nothing
  added under ``run_id="trip-42"``.
- ``add(messages, infer=True)`` (mem0's default) keeps what the user states about themselves
  (facts, plans, preferences, corrections), never small talk or the assistant's boilerplate,
  with engram's built-in distiller (or the model ``memctl serve`` is configured with), and may
  update or delete the memories it changes; ``infer=False`` stores every message verbatim.
- ``search`` ranks by engram's hybrid recall with scores in [0, 1]; without ``threshold`` the
  server's floors (0.05, and a fifth of the best) leave out what barely matches.

Every argument a method accepts is sent to the server; an argument it does not know raises
``TypeError`` (mem0's ``memory_type``, ``prompt`` or ``rerank`` have no engram equivalent here).

Each method is written once, as a plan (see ``_protocol``) over the client's plans:
``Memory`` runs it on a ``Client``, ``AsyncMemory`` on an ``AsyncClient``, so a parameter
mapped here (a scope, a filter) is mapped for both.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _protocol as p
from ._operations import DEFAULT_URL, Filter, Operations as O
from ._protocol import JSON, Plan
from .aio import AsyncClient
from .client import Client
from .errors import NotFoundError

Messages = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]
Time = Union[str, _dt.datetime, _dt.date]


def _scope(user_id: Optional[str], agent_id: Optional[str], run_id: Optional[str]) -> Dict[str, Optional[str]]:
    for name, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if v is not None and (not isinstance(v, str) or not v):
            raise ValueError(f"{name} must be a non-empty string, not {v!r}")
    if user_id is None and agent_id is None and run_id is None:
        raise ValueError("give user_id, agent_id or run_id: engram keeps each one's memories in a session of its own")
    return {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}


def _refuse(method: str, unknown: Mapping[str, Any]) -> None:
    if unknown:
        names = ", ".join(sorted(unknown))
        raise TypeError(f"Memory.{method}() does not take {names}: engram has no equivalent, and ignoring it would change "
                        f"what is stored or found")


def _time(t: Optional[Time], what: str) -> Optional[str]:
    """An RFC 3339 time for the server: a string as given, a datetime (naive: UTC), a date."""
    if t is None or isinstance(t, str):
        return t
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return t.isoformat()
    if isinstance(t, _dt.date):
        return t.isoformat() + "T00:00:00Z"
    raise TypeError(f"{what} must be an RFC 3339 string, a datetime or a date, not {type(t).__name__}")


_MESSAGE_KEYS = {"role", "content", "text", "time"}


def _messages(messages: Messages) -> List[JSON]:
    """mem0's messages as engram's: a text is one user message; ``content`` is the text."""
    if isinstance(messages, str):
        return [{"role": "user", "text": messages}]
    if isinstance(messages, Mapping):
        messages = [messages]
    out: List[JSON] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise TypeError(f"message {i} is a {type(m).__name__}, not a mapping with role and content")
        unknown = set(m) - _MESSAGE_KEYS
        if unknown:
            raise ValueError(f"message {i} has {sorted(unknown)}: a message takes role, content (or text) and time")
        if "content" in m and "text" in m:
            raise ValueError(f"message {i} has both content and text")
        text = m.get("content", m.get("text"))
        if not isinstance(text, str):
            raise TypeError(f"message {i}: content must be a string, not {type(text).__name__}")
        msg: JSON = {"role": str(m.get("role", "user")), "text": text}
        if m.get("time") is not None:
            msg["time"] = _time(m["time"], f"message {i}: time")
        out.append(msg)
    return out


def _item(m: JSON, session_key: str = "user_id") -> JSON:
    """An engram memory in mem0's shape (engram's own fields kept alongside). The session is
    reported under the scope key it was named by; agent_id and run_id come from the metadata."""
    metadata = dict(m.get("metadata") or {})
    out: JSON = {
        "id": m["id"],
        "memory": m["text"],
        session_key: m["session"],
    }
    for k in ("agent_id", "run_id"):
        if k in metadata:
            out[k] = metadata.pop(k)
    out.update({
        "metadata": metadata,
        "created_at": m["created"],
        "updated_at": m["updated"],
        "tags": m.get("tags") or [],
        "source": m.get("source", ""),
        "importance": m.get("importance"),
    })
    if "score" in m:
        out["score"] = m["score"]["final"]
        out["score_parts"] = m["score"]
    if m.get("stale"):
        out["stale"] = True
        out["newer"] = m.get("newer")
    return out


def _session_key(scope: Mapping[str, Optional[str]]) -> str:
    for k in ("user_id", "agent_id", "run_id"):
        if scope.get(k) is not None:
            return k
    return "user_id"


class Facade:
    """The mem0-style methods as plans, run by ``Memory`` (blocking) and ``AsyncMemory`` (awaited)."""

    @staticmethod
    def add(messages: Messages, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
            run_id: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None, infer: bool = True,
            source: Optional[str] = None, tags: Optional[Sequence[str]] = None, importance: Optional[float] = None,
            time: Optional[Time] = None, **unknown: Any) -> Plan[JSON]:
        """Remember a text (a user message), a message ``{"role", "content", "time"?}`` or a list of
        them (system messages are skipped). With ``infer`` (the default, as in mem0) only what the
        user states about themselves is kept, and memories it changes are updated or deleted;
        ``infer=False`` stores each message verbatim (the built-in distiller keeps first-person
        statements: store a fact written in the third person, "Alice prefers tea", with
        ``infer=False``). ``importance`` is in (0, 1]; ``time`` (RFC
        3339, a datetime or a date) is when messages without their own time were said.

        Returns ``{"results": [{"id", "memory", "event"}]}``: event ADD for a new memory, UPDATE
        where one changed (``previous_memory`` holds its earlier text, also in history), DELETE
        for one the conversation retracted."""
        _refuse("add", unknown)
        scope = _scope(user_id, agent_id, run_id)
        r = yield from O.remember_messages(None, _messages(messages), infer=infer, metadata=metadata, source=source,
                                           tags=tags, importance=importance, time=_time(time, "time"), **scope)
        results: List[JSON] = []
        for e in r.get("events", []):
            out: JSON = {"id": e["id"], "memory": e.get("memory"), "event": e["event"].upper()}
            if e.get("previous"):
                out["previous_memory"] = e["previous"]
            results.append(out)
        return {"results": results}

    @staticmethod
    def search(query: str, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
               run_id: Optional[str] = None, limit: int = 100, filters: Optional[Filter] = None,
               threshold: Optional[float] = None, **unknown: Any) -> Plan[JSON]:
        """The memories of the scope that best match query: ``{"results": [... "score"]}``.
        ``filters`` is engram's JSON filter language (``{"metadata.k": "v"}``, ``{"tags": "x"}``);
        a plain ``{"k": "v"}`` whose key is not an engram field is read as metadata. ``threshold``
        is the least score in [0, 1] (None: the server's default, 0.05; 0: none); results under a
        fifth of the best are left out either way. A memory a newer one changes comes after it
        with ``stale`` and ``newer``."""
        _refuse("search", unknown)
        scope = _scope(user_id, agent_id, run_id)
        r = yield from O.recall(query, k=min(limit, 1000), filter=_filters(filters), min_score=threshold, **scope)
        key = _session_key(scope)
        return {"results": [_item(m, key) for m in r["results"]]}

    @staticmethod
    def get_all(*, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                run_id: Optional[str] = None, limit: int = 100, filters: Optional[Filter] = None,
                **unknown: Any) -> Plan[JSON]:
        """The scope's memories, newest first, at most ``limit``: ``{"results": [...]}``."""
        _refuse("get_all", unknown)
        scope = _scope(user_id, agent_id, run_id)
        key = _session_key(scope)
        out: List[JSON] = []
        cursor = None
        while len(out) < limit:
            page = yield from O.list(where=_filters(filters), limit=min(limit - len(out), 1000), cursor=cursor, **scope)
            out.extend(_item(m, key) for m in page["memories"][:limit - len(out)])
            cursor = page.get("next_cursor")
            if not cursor:
                break
        return {"results": out}

    @staticmethod
    def get(memory_id: str) -> Plan[Optional[JSON]]:
        """One memory, or None when there is none."""
        try:
            return _item((yield from O.get(memory_id)))
        except NotFoundError:
            return None

    @staticmethod
    def update(memory_id: str, data: str, metadata: Optional[Mapping[str, Any]] = None) -> Plan[JSON]:
        """Replace a memory's text (re-embedded; the old text goes to its history), and its metadata
        when given (its scope, agent_id and run_id, stays)."""
        yield from O.update(memory_id, text=data, metadata=metadata)
        return {"message": "Memory updated successfully!"}

    @staticmethod
    def delete(memory_id: str) -> Plan[JSON]:
        """Delete one memory and its history."""
        yield from O.delete(memory_id)
        return {"message": "Memory deleted successfully!"}

    @staticmethod
    def delete_all(*, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                   run_id: Optional[str] = None) -> Plan[JSON]:
        """Forget every memory of the scope (restorable for the server's retention, as forget)."""
        n = yield from O.forget(all=True, **_scope(user_id, agent_id, run_id))
        return {"message": f"{n} memories deleted successfully!"}

    @staticmethod
    def history(memory_id: str) -> Plan[List[JSON]]:
        """The memory's changes, oldest first, as mem0 lists them: ADD, then one UPDATE per
        version (``old_memory`` -> ``new_memory``), with engram's change kind in ``change``."""
        current = yield from O.get(memory_id)
        versions = yield from O.history(memory_id)
        texts = [v["memory"]["text"] for v in versions] + [current["text"]]
        events: List[JSON] = []
        first = versions[0]["memory"] if versions else current
        events.append({"id": f"{memory_id}#0", "memory_id": memory_id, "old_memory": None, "new_memory": texts[0],
                       "event": "ADD", "created_at": first["created"], "updated_at": None, "change": "add"})
        for i, v in enumerate(versions):
            events.append({"id": f"{memory_id}#{v['version']}", "memory_id": memory_id, "old_memory": texts[i],
                           "new_memory": texts[i + 1], "event": "UPDATE", "created_at": first["created"],
                           "updated_at": v["at"], "change": v["change"]})
        return events

    @staticmethod
    def reset(*, user_id: Optional[str] = None, agent_id: Optional[str] = None,
              run_id: Optional[str] = None) -> Plan[JSON]:
        """Forget every memory the key can reach: of the scope given, or without one (mem0's
        reset()) of every session the key may read. Forgetting is restorable as ``forget`` is:
        until ``purge_after`` (the server's ``--forget-retention``, 30 days by default)
        ``client.restore([m["id"] for m in client.forgotten()])`` brings them back; a server
        started with ``--forget-retention 0`` forgets for good (``restorable`` says so).

        Returns ``{"message", "forgotten", "restorable", "purge_after"?}``."""
        if user_id is not None or agent_id is not None or run_id is not None:
            answers = [(yield from O.forget_answer(all=True, **_scope(user_id, agent_id, run_id)))]
        else:
            answers = []
            for s in (yield from O.sessions()):
                answers.append((yield from O.forget_answer(session=s["name"], all=True)))
        n = sum(a["forgotten"] for a in answers)
        out: JSON = {"message": f"{n} memories forgotten", "forgotten": n,
                     "restorable": all(a.get("restorable", False) for a in answers) if answers else True}
        after = [a["purge_after"] for a in answers if a.get("purge_after")]
        if after:
            out["purge_after"] = min(after)
        return out


class Memory:
    """mem0's ``Memory`` over a ``memctl serve``: ``Memory(url=..., token=...)`` or ``Memory(client=...)``."""

    def __init__(self, url: str = DEFAULT_URL, token: Optional[str] = None,
                 client: Optional[Client] = None, timeout: float = 30.0) -> None:
        self.client = client or Client(url, token=token, timeout=timeout)

    def _run(self, plan: Plan[p.T]) -> p.T:
        return self.client._run(plan)

    add = p.sync_method(Facade.add)
    search = p.sync_method(Facade.search)
    get_all = p.sync_method(Facade.get_all)
    get = p.sync_method(Facade.get)
    update = p.sync_method(Facade.update)
    delete = p.sync_method(Facade.delete)
    delete_all = p.sync_method(Facade.delete_all)
    history = p.sync_method(Facade.history)
    reset = p.sync_method(Facade.reset)


class AsyncMemory:
    """``Memory`` for asyncio: the same methods, awaited, over an ``AsyncClient``:
    ``AsyncMemory(url=..., token=...)`` or ``AsyncMemory(client=...)``; ``async with`` closes
    the client it made."""

    def __init__(self, url: str = DEFAULT_URL, token: Optional[str] = None,
                 client: Optional[AsyncClient] = None, timeout: float = 30.0) -> None:
        self._owns = client is None
        self.client = client or AsyncClient(url, token=token, timeout=timeout)

    async def _run(self, plan: Plan[p.T]) -> p.T:
        return await self.client._run(plan)

    async def aclose(self) -> None:
        """Close the client's connections, where this AsyncMemory made the client."""
        if self._owns:
            await self.client.aclose()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    add = p.async_method(Facade.add)
    search = p.async_method(Facade.search)
    get_all = p.async_method(Facade.get_all)
    get = p.async_method(Facade.get)
    update = p.async_method(Facade.update)
    delete = p.async_method(Facade.delete)
    delete_all = p.async_method(Facade.delete_all)
    history = p.async_method(Facade.history)
    reset = p.async_method(Facade.reset)


_FIELDS = {"session", "source", "tags", "importance", "access_count", "created", "updated", "last_access", "and", "or", "not"}


def _filters(filters: Optional[Filter]) -> Optional[Dict[str, Any]]:
    if not filters:
        return None
    return {(k if k in _FIELDS or k.startswith("metadata.") else "metadata." + k): v for k, v in filters.items()}
