"""A mem0-style facade: ``Memory`` (and ``AsyncMemory``) with add, search, get_all, get, update, delete, history.

The shapes follow mem0's ``Memory`` (results under ``"results"``, a memory as
``{"id", "memory", "metadata", "created_at", "updated_at", ...}``, history events with
``old_memory``, ``new_memory`` and ``event``), and ``user_id``/``agent_id``/``run_id`` name the
engram session, so code written for mem0 ports with few changes. Differences: engram stores
the texts it is given (it does not ask a model to extract facts), and ``search`` ranks by
engram's hybrid recall (vector + BM25) with scores in [0, 1].

Each method is written once, as a plan (see ``_protocol``) over the client's plans:
``Memory`` runs it on a ``Client``, ``AsyncMemory`` on an ``AsyncClient``, so a parameter
mapped here (a scope, a filter) is mapped for both.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _protocol as p
from ._operations import DEFAULT_URL, Filter, Operations as O
from ._protocol import JSON, Plan
from .aio import AsyncClient
from .client import Client
from .errors import NotFoundError

Messages = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]


def _session(user_id: Optional[str], agent_id: Optional[str], run_id: Optional[str]) -> str:
    for v in (user_id, agent_id, run_id):
        if v is not None:
            return v
    raise ValueError("give user_id, agent_id or run_id: engram keeps each one's memories in a session of its own")


def _item(m: JSON) -> JSON:
    """An engram memory in mem0's shape (engram's own fields kept alongside)."""
    out: JSON = {
        "id": m["id"],
        "memory": m["text"],
        "user_id": m["session"],
        "metadata": m.get("metadata") or {},
        "created_at": m["created"],
        "updated_at": m["updated"],
        "tags": m.get("tags") or [],
        "source": m.get("source", ""),
        "importance": m.get("importance"),
    }
    if "score" in m:
        out["score"] = m["score"]["final"]
        out["score_parts"] = m["score"]
    return out


class Facade:
    """The mem0-style methods as plans, run by ``Memory`` (blocking) and ``AsyncMemory`` (awaited)."""

    @staticmethod
    def add(messages: Messages, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
            run_id: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None,
            source: Optional[str] = None, tags: Optional[Sequence[str]] = None, **_: Any) -> Plan[JSON]:
        """Remember a text, a message ``{"role", "content"}`` or a list of them (system messages
        are skipped). Returns ``{"results": [{"id", "memory", "event"}]}``, event ADD for a new
        memory and UPDATE where a near-duplicate was merged (its earlier version is in history)."""
        session = _session(user_id, agent_id, run_id)
        if isinstance(messages, str):
            texts = [messages]
        elif isinstance(messages, Mapping):
            texts = [str(messages.get("content", ""))] if messages.get("role") != "system" else []
        else:
            texts = [str(m.get("content", "")) for m in messages if m.get("role") != "system"]
        results: List[JSON] = []
        for text in texts:
            if not text.strip():
                continue
            r = yield from O.remember(session, text, metadata=metadata, source=source, tags=tags)
            for i, id in enumerate(r["ids"]):
                results.append({"id": id, "memory": text, "event": "UPDATE" if r["merged"][i] else "ADD"})
        return {"results": results}

    @staticmethod
    def search(query: str, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
               run_id: Optional[str] = None, limit: int = 100, filters: Optional[Filter] = None,
               threshold: Optional[float] = None, **_: Any) -> Plan[JSON]:
        """The memories of the session that best match query: ``{"results": [... "score"]}``.
        ``filters`` is engram's JSON filter language (``{"metadata.k": "v"}``, ``{"tags": "x"}``);
        a plain ``{"k": "v"}`` whose key is not an engram field is read as metadata."""
        session = _session(user_id, agent_id, run_id)
        r = yield from O.recall(query, session, k=min(limit, 1000), filter=_filters(filters), min_score=threshold)
        return {"results": [_item(m) for m in r["results"]]}

    @staticmethod
    def get_all(*, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                run_id: Optional[str] = None, limit: int = 100, filters: Optional[Filter] = None,
                **_: Any) -> Plan[JSON]:
        """The session's memories, newest first, at most ``limit``: ``{"results": [...]}``."""
        session = _session(user_id, agent_id, run_id)
        out: List[JSON] = []
        cursor = None
        while len(out) < limit:
            page = yield from O.list(session, where=_filters(filters), limit=min(limit - len(out), 1000), cursor=cursor)
            out.extend(_item(m) for m in page["memories"][:limit - len(out)])
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
        """Replace a memory's text (re-embedded; the old text goes to its history)."""
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
        """Forget every memory of the session."""
        n = yield from O.forget(session=_session(user_id, agent_id, run_id), all=True)
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
    def reset() -> Plan[None]:
        """Not offered: engram does not wipe a store from a client."""
        raise NotImplementedError("engram does not wipe a store from a client; use `memctl forget --session S --all`")
        yield  # a plan, like the others


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
