"""A mem0-style facade: ``Memory`` with add, search, get_all, get, update, delete, history.

The shapes follow mem0's ``Memory`` (results under ``"results"``, a memory as
``{"id", "memory", "metadata", "created_at", "updated_at", ...}``, history events with
``old_memory``, ``new_memory`` and ``event``), and ``user_id``/``agent_id``/``run_id`` name the
engram session, so code written for mem0 ports with few changes. Differences: engram stores
the texts it is given (it does not ask a model to extract facts), and ``search`` ranks by
engram's hybrid recall (vector + BM25) with scores in [0, 1].
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .client import Client, Filter, JSON

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


class Memory:
    """mem0's ``Memory`` over a ``memctl serve``: ``Memory(url=..., token=...)`` or ``Memory(client=...)``."""

    def __init__(self, url: str = "http://127.0.0.1:7077", token: Optional[str] = None,
                 client: Optional[Client] = None, timeout: float = 30.0) -> None:
        self.client = client or Client(url, token=token, timeout=timeout)

    def add(self, messages: Messages, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
            run_id: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None,
            source: Optional[str] = None, tags: Optional[Sequence[str]] = None, **_: Any) -> JSON:
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
            r = self.client.remember(session, text, metadata=metadata, source=source, tags=tags)
            for i, id in enumerate(r["ids"]):
                results.append({"id": id, "memory": text, "event": "UPDATE" if r["merged"][i] else "ADD"})
        return {"results": results}

    def search(self, query: str, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
               run_id: Optional[str] = None, limit: int = 100, filters: Optional[Filter] = None,
               threshold: Optional[float] = None, **_: Any) -> JSON:
        """The memories of the session that best match query: ``{"results": [... "score"]}``.
        ``filters`` is engram's JSON filter language (``{"metadata.k": "v"}``, ``{"tags": "x"}``);
        a plain ``{"k": "v"}`` whose key is not an engram field is read as metadata."""
        session = _session(user_id, agent_id, run_id)
        r = self.client.recall(query, session, k=min(limit, 1000), filter=_filters(filters), min_score=threshold)
        return {"results": [_item(m) for m in r["results"]]}

    def get_all(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                run_id: Optional[str] = None, limit: int = 100, filters: Optional[Filter] = None, **_: Any) -> JSON:
        """The session's memories, newest first, at most ``limit``: ``{"results": [...]}``."""
        session = _session(user_id, agent_id, run_id)
        out: List[JSON] = []
        for m in self.client.iter_memories(session, page_size=min(limit, 1000), where=_filters(filters)):
            out.append(_item(m))
            if len(out) >= limit:
                break
        return {"results": out}

    def get(self, memory_id: str) -> Optional[JSON]:
        """One memory, or None when there is none."""
        from .client import NotFoundError
        try:
            return _item(self.client.get(memory_id))
        except NotFoundError:
            return None

    def update(self, memory_id: str, data: str, metadata: Optional[Mapping[str, Any]] = None) -> JSON:
        """Replace a memory's text (re-embedded; the old text goes to its history)."""
        self.client.update(memory_id, text=data, metadata=metadata)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> JSON:
        self.client.delete(memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
                   run_id: Optional[str] = None) -> JSON:
        n = self.client.forget(session=_session(user_id, agent_id, run_id), all=True)
        return {"message": f"{n} memories deleted successfully!"}

    def history(self, memory_id: str) -> List[JSON]:
        """The memory's changes, oldest first, as mem0 lists them: ADD, then one UPDATE per
        version (``old_memory`` -> ``new_memory``), with engram's change kind in ``change``."""
        current = self.client.get(memory_id)
        versions = self.client.history(memory_id)
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

    def reset(self) -> None:
        raise NotImplementedError("engram does not wipe a store from a client; use `memctl forget --session S --all`")


_FIELDS = {"session", "source", "tags", "importance", "access_count", "created", "updated", "last_access", "and", "or", "not"}


def _filters(filters: Optional[Filter]) -> Optional[Dict[str, Any]]:
    if not filters:
        return None
    return {(k if k in _FIELDS or k.startswith("metadata.") else "metadata." + k): v for k, v in filters.items()}
