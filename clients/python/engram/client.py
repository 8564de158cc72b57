"""The HTTP client: one method per route of ``memctl serve``."""

from __future__ import annotations

import json
import time as _time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

JSON = Dict[str, Any]
Filter = Mapping[str, Any]
"""A filter in engram's JSON filter language (docs/format/filter.md), e.g.
``{"tags": {"in": ["travel"]}, "importance": {"range": {"gte": 0.5}}}``."""

DEFAULT_URL = "http://127.0.0.1:7077"


class EngramError(Exception):
    """A request the server refused or failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, status: int, message: str, method: str = "", path: str = "") -> None:
        super().__init__(f"{method} {path}: {status}: {message}" if method else f"{status}: {message}")
        self.status = status
        self.message = message


class BadRequestError(EngramError):
    """400: invalid input or filter; nothing was written."""


class ForbiddenError(EngramError):
    """403: the key lacks the right or the session is outside its scope."""


class NotFoundError(EngramError):
    """404: no memory, task, version or route by that name (the message names it)."""


def _error(status: int, message: str, method: str, path: str) -> EngramError:
    cls = {400: BadRequestError, 403: ForbiddenError, 404: NotFoundError}.get(status, EngramError)
    return cls(status, message, method, path)


def _drop_none(d: Mapping[str, Any]) -> JSON:
    return {k: v for k, v in d.items() if v is not None}


class Client:
    """A connection to ``memctl serve``.

    ``token`` is the bearer token or API key (``memctl keys add``); ``timeout`` bounds each
    request in seconds. Every method returns the server's JSON answer as dicts and lists
    (memories in their one JSON form: id, session, text, source, tags, importance, metadata,
    created, updated, last_access, access_count) and raises an ``EngramError`` subclass on
    failure.
    """

    def __init__(self, url: str = DEFAULT_URL, token: Optional[str] = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # -- plumbing --------------------------------------------------------------------------

    def _open(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None,
              timeout: Optional[float] = None):
        url = self.url + path
        if query:
            pairs = []
            for k, v in query.items():
                if v is None:
                    continue
                for item in (v if isinstance(v, (list, tuple)) else [v]):
                    if isinstance(item, bool):
                        item = "true" if item else "false"
                    elif isinstance(item, (dict, list)):
                        item = json.dumps(item)
                    pairs.append((k, str(item)))
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            return urllib.request.urlopen(req, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as e:
            raw = e.read().decode("utf-8", "replace")
            try:
                msg = json.loads(raw).get("error", raw)
            except ValueError:
                msg = raw
            raise _error(e.code, msg, method, path) from None
        except urllib.error.URLError as e:
            raise EngramError(0, f"cannot reach {self.url}: {e.reason}", method, path) from None

    def request(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None) -> Any:
        """Send one request and decode its JSON answer (any route, for what has no method)."""
        with self._open(method, path, body, query) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    # -- service ---------------------------------------------------------------------------

    def health(self) -> JSON:
        return self.request("GET", "/healthz")

    def openapi(self) -> JSON:
        return self.request("GET", "/openapi.json")

    def stats(self) -> JSON:
        """Store statistics (admin right)."""
        return self.request("GET", "/v1/stats")

    def sessions(self) -> List[JSON]:
        return self.request("GET", "/v1/sessions")["sessions"]

    # -- long-term memory ------------------------------------------------------------------

    def remember(self, session: Optional[str], text: str, *, source: Optional[str] = None, tags: Optional[Sequence[str]] = None,
                 importance: Optional[float] = None, time: Optional[str] = None,
                 metadata: Optional[Mapping[str, Any]] = None, context: Optional[str] = None,
                 user_id: Optional[str] = None, agent_id: Optional[str] = None, run_id: Optional[str] = None) -> JSON:
        """Remember text (chunked) in a session: ``{"ids", "merged", "superseded", "older"}``, one entry per chunk.

        ``user_id``, ``agent_id`` and ``run_id`` are mem0's scopes: the session is the user_id
        (session's other name), else the agent_id, else the run_id; the others are kept on the
        memories (metadata ``agent_id``, ``run_id``) and select them in recall, list and forget."""
        return self.request("POST", "/v1/remember", _drop_none({
            "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id, "text": text, "context": context,
            "source": source, "tags": list(tags) if tags is not None else None,
            "importance": importance, "time": time, "metadata": dict(metadata) if metadata is not None else None}))

    def remember_messages(self, session: Optional[str], messages: Sequence[Mapping[str, Any]], *, infer: bool = False,
                          source: Optional[str] = None, tags: Optional[Sequence[str]] = None, importance: Optional[float] = None,
                          time: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None, context: Optional[str] = None,
                          user_id: Optional[str] = None, agent_id: Optional[str] = None, run_id: Optional[str] = None) -> JSON:
        """Remember a conversation: messages ``{"role", "text", "time"?}``, oldest first (system ones
        are skipped). With ``infer`` only what the user states about themselves becomes memories
        (updating or deleting those it changes); without, every message is stored verbatim.
        Returns ``{"turns", "events": [{"event", "id", "memory", "previous"?, "time"}], "fallback"?}``
        (a key without the read right gets the events without texts). ``time`` is the time of
        messages without one."""
        return self.request("POST", "/v1/remember", _drop_none({
            "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id,
            "messages": [dict(m) for m in messages], "infer": infer or None, "context": context,
            "source": source, "tags": list(tags) if tags is not None else None,
            "importance": importance, "time": time, "metadata": dict(metadata) if metadata is not None else None}))

    def recall(self, query: str, session: Optional[str] = None, *, all_sessions: bool = False, k: Optional[int] = None,
               filter: Optional[Filter] = None, mode: Optional[str] = None, fusion: Optional[str] = None,
               vector_weight: Optional[float] = None, keyword_weight: Optional[float] = None,
               min_score: Optional[float] = None, no_decay: bool = False,
               source_weights: Optional[Mapping[str, float]] = None, no_touch: bool = False,
               prompt_tokens: Optional[int] = None, turns: Optional[Sequence[Mapping[str, Any]]] = None,
               min_relative: Optional[float] = None, as_of: Optional[str] = None, superseded: Optional[str] = None,
               user_id: Optional[str] = None, agent_id: Optional[str] = None, run_id: Optional[str] = None) -> JSON:
        """Recall the memories best matching query: ``{"results": [memory + "score"], "prompt"?, "session_empty"?}``.

        ``min_score`` and ``min_relative`` are the floors (None: the server's defaults 0.05 and
        0.2; 0: none); ``as_of`` answers from what was true then (RFC 3339, a date, or an age
        such as ``30d``); ``superseded`` is demote (default), hide or keep. A result a newer
        memory changes carries ``stale`` and ``newer``."""
        if session is None and not all_sessions and user_id is None and agent_id is None and run_id is None:
            raise ValueError("recall needs a session (or user_id, agent_id, run_id), or all_sessions=True")
        return self.request("POST", "/v1/recall", _drop_none({
            "query": query, "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id,
            "all_sessions": all_sessions or None,
            "k": k, "filter": dict(filter) if filter is not None else None, "mode": mode, "fusion": fusion,
            "vector_weight": vector_weight, "keyword_weight": keyword_weight, "min_score": min_score,
            "min_relative": min_relative, "as_of": as_of, "superseded": superseded,
            "no_decay": no_decay or None, "source_weights": dict(source_weights) if source_weights else None,
            "no_touch": no_touch or None, "prompt_tokens": prompt_tokens,
            "turns": [dict(t) for t in turns] if turns else None}))

    def forget(self, ids: Optional[Sequence[str]] = None, *, session: Optional[str] = None, all: bool = False,
               filter: Optional[Filter] = None, purge: bool = False, user_id: Optional[str] = None,
               agent_id: Optional[str] = None, run_id: Optional[str] = None) -> int:
        """Forget memories: by IDs (all must exist, or nothing is forgotten: NotFoundError names the
        others), every memory of a session or scope (``session=S`` or ``user_id``, ``agent_id``,
        ``run_id`` with ``all=True``), or those a filter selects (with a session: only there).
        Forgotten memories stay restorable (``forgotten``, ``restore``) for the server's
        retention; ``purge`` deletes for good. Returns how many were forgotten."""
        return self.forget_answer(ids, session=session, all=all, filter=filter, purge=purge,
                                  user_id=user_id, agent_id=agent_id, run_id=run_id)["forgotten"]

    def forget_answer(self, ids: Optional[Sequence[str]] = None, *, session: Optional[str] = None, all: bool = False,
                      filter: Optional[Filter] = None, purge: bool = False, user_id: Optional[str] = None,
                      agent_id: Optional[str] = None, run_id: Optional[str] = None) -> JSON:
        """``forget``'s whole answer: ``{"forgotten", "restorable", "purge_after"?, "purged"?}``."""
        body = _drop_none({"ids": list(ids) if ids else None, "session": session, "user_id": user_id, "agent_id": agent_id,
                           "run_id": run_id, "all": all or None, "filter": dict(filter) if filter is not None else None,
                           "purge": purge or None})
        return self.request("POST", "/v1/forget", body)

    def forgotten(self, session: Optional[str] = None) -> List[JSON]:
        """The trash: forgotten memories (of one session), each with ``forgotten`` and ``purge_after``."""
        return self.request("GET", "/v1/forgotten", query={"session": session})["memories"]

    def restore(self, ids: Sequence[str]) -> int:
        """Bring forgotten memories back under their IDs (all or nothing). Returns how many."""
        return self.request("POST", "/v1/restore", {"ids": list(ids)})["restored"]

    def get(self, id: str, *, vector: bool = False) -> JSON:
        """One memory by ID (NotFoundError when there is none, or it is outside the key's scope)."""
        return self.request("GET", "/v1/memories/" + urllib.parse.quote(id, safe=""), query={"vector": True} if vector else None)

    def list(self, session: Optional[str] = None, *, where: Optional[Filter] = None, tags: Optional[Sequence[str]] = None,
             source: Optional[str] = None, since: Optional[str] = None, until: Optional[str] = None,
             limit: Optional[int] = None, cursor: Optional[str] = None, user_id: Optional[str] = None,
             agent_id: Optional[str] = None, run_id: Optional[str] = None) -> JSON:
        """One page of memories, newest first: ``{"memories": [...], "next_cursor"?}``. ``tags``
        must all be present; ``since``/``until`` (RFC 3339) bound the creation time; ``user_id``,
        ``agent_id`` and ``run_id`` select a scope as ``remember`` stores it."""
        return self.request("GET", "/v1/memories", query={
            "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id,
            "where": dict(where) if where is not None else None, "tag": list(tags) if tags else None,
            "source": source, "since": since, "until": until, "limit": limit, "cursor": cursor})

    def iter_memories(self, session: Optional[str] = None, *, page_size: int = 100, **filters: Any) -> Iterator[JSON]:
        """Every memory ``list`` selects, page after page."""
        cursor = None
        while True:
            page = self.list(session, limit=page_size, cursor=cursor, **filters)
            yield from page["memories"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def update(self, id: str, *, text: Optional[str] = None, source: Optional[str] = None,
               tags: Optional[Sequence[str]] = None, importance: Optional[float] = None,
               metadata: Optional[Mapping[str, Any]] = None) -> JSON:
        """Replace fields of a memory (a new text is re-embedded); the earlier version goes to its history."""
        return self.request("PATCH", "/v1/memories/" + urllib.parse.quote(id, safe=""), _drop_none({
            "text": text, "source": source, "tags": list(tags) if tags is not None else None, "importance": importance,
            "metadata": dict(metadata) if metadata is not None else None}))

    def delete(self, id: str) -> None:
        """Delete one memory and its history (NotFoundError when there is none)."""
        self.request("DELETE", "/v1/memories/" + urllib.parse.quote(id, safe=""))

    def history(self, id: str) -> List[JSON]:
        """The earlier versions of a memory, oldest first: ``{"version", "change", "at", "memory"}``."""
        return self.request("GET", "/v1/memories/" + urllib.parse.quote(id, safe="") + "/history")["versions"]

    def revert(self, id: str, version: int) -> JSON:
        """Bring version ``version`` back; the current one goes to the history."""
        return self.request("POST", "/v1/memories/" + urllib.parse.quote(id, safe="") + "/revert", {"version": version})

    def export(self, filter: Optional[Filter] = None, *, vectors: bool = False) -> List[JSON]:
        """The memories a filter selects in the export format: the header line, then one memory per line."""
        body = _drop_none({"filter": dict(filter) if filter is not None else None, "vectors": vectors or None})
        with self._open("POST", "/v1/export", body) as resp:
            return [json.loads(line) for line in resp.read().decode("utf-8").splitlines() if line.strip()]

    def cleanup(self, *, older_than: Optional[str] = None, include_recalled: bool = False, session: Optional[str] = None,
                filter: Optional[Filter] = None, dry_run: bool = False) -> JSON:
        """Move stale memories (default: 180 days, never recalled) of the key's sessions to the cold archive."""
        return self.request("POST", "/v1/cleanup", _drop_none({
            "older_than": older_than, "include_recalled": include_recalled or None, "session": session,
            "filter": dict(filter) if filter is not None else None, "dry_run": dry_run or None}))

    # -- short-term memory -----------------------------------------------------------------

    def context(self, session: str) -> JSON:
        """The session's conversation: summary and recent turns."""
        return self.request("GET", "/v1/sessions/" + urllib.parse.quote(session, safe="") + "/context")

    def add_turn(self, session: str, role: str, text: str, *, time: Optional[str] = None) -> JSON:
        return self.request("POST", "/v1/sessions/" + urllib.parse.quote(session, safe="") + "/turns",
                            _drop_none({"role": role, "text": text, "time": time}))

    def distill(self, session: str) -> JSON:
        """Turn the session's turns not yet distilled into long-term memories (what the user states
        about themselves); ``{"turns", "events", "fallback"?}``. Distilling again stores nothing new."""
        return self.request("POST", "/v1/sessions/" + urllib.parse.quote(session, safe="") + "/distill", {})

    def clear_context(self, session: str) -> None:
        self.request("DELETE", "/v1/sessions/" + urllib.parse.quote(session, safe="") + "/context")

    # -- working memory --------------------------------------------------------------------

    def tasks(self) -> List[JSON]:
        return self.request("GET", "/v1/tasks")["tasks"]

    def start_task(self, goal: str, *, id: Optional[str] = None, session: Optional[str] = None) -> JSON:
        return self.request("POST", "/v1/tasks", _drop_none({"goal": goal, "id": id, "session": session}))

    # Task IDs are per session: session names the task's session, needed only when the key
    # sees tasks of this ID in several sessions (the server answers 400 otherwise).

    def task(self, id: str, *, session: Optional[str] = None) -> JSON:
        return self.request("GET", "/v1/tasks/" + urllib.parse.quote(id, safe=""), query={"session": session})

    def update_step(self, id: str, name: str, status: str, *, result: Any = None, next: Optional[str] = None,
                    session: Optional[str] = None) -> JSON:
        return self.request("POST", "/v1/tasks/" + urllib.parse.quote(id, safe="") + "/steps",
                            _drop_none({"name": name, "status": status, "result": result, "next": next}),
                            query={"session": session})

    def finish_task(self, id: str, status: str = "done", *, session: Optional[str] = None) -> JSON:
        return self.request("POST", "/v1/tasks/" + urllib.parse.quote(id, safe="") + "/finish", {"status": status},
                            query={"session": session})

    def delete_task(self, id: str, *, session: Optional[str] = None) -> None:
        self.request("DELETE", "/v1/tasks/" + urllib.parse.quote(id, safe=""), query={"session": session})

    # -- administration (admin right) ------------------------------------------------------

    def jobs(self) -> List[JSON]:
        return self.request("GET", "/v1/jobs")["jobs"]

    def job(self, id: str) -> JSON:
        return self.request("GET", "/v1/jobs/" + urllib.parse.quote(id, safe=""))

    def cancel_job(self, id: str) -> JSON:
        return self.request("POST", "/v1/jobs/" + urllib.parse.quote(id, safe="") + "/cancel", {})

    def admin(self, operation: str, body: Optional[Mapping[str, Any]] = None, *, wait: bool = True,
              poll: float = 0.05, timeout: float = 600.0) -> JSON:
        """Run an admin job (flush, check, compact, cleanup, archive/restore, backup, reembed) and,
        with ``wait``, poll it until it ends; returns the job (its ``result`` when done)."""
        job = self.request("POST", "/v1/admin/" + operation, dict(body) if body is not None else {})
        if not wait or "id" not in job:
            return job
        deadline = _time.monotonic() + timeout
        while job.get("state") in ("queued", "running"):
            if _time.monotonic() > deadline:
                raise EngramError(0, f"job {job['id']} still {job.get('state')} after {timeout}s")
            _time.sleep(poll)
            job = self.job(job["id"])
        if job.get("state") != "done":
            raise EngramError(500, job.get("error") or f"job {job['id']} {job.get('state')}")
        return job

    def archive(self) -> List[JSON]:
        return self.request("GET", "/v1/admin/archive")["memories"]


Number = Union[int, float]
