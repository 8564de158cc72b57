"""The operations of the HTTP API, written once for ``Client`` and ``AsyncClient``.

Each is a plan (see ``_protocol``): it builds its request, reads the answer, and returns what
the method returns. ``Client`` runs them blocking, ``AsyncClient`` awaits them; a parameter or
field added here is in both. They are static methods of ``Operations`` so that they may be
named like builtins (``list``) without shadowing them.
"""

from __future__ import annotations

import json
import time as _time
from typing import Any, Callable, List, Mapping, Optional, Sequence, Union

from ._protocol import JSON, Callback, Item, Plan, Sleep, Stream, call, quote
from .errors import EngramError, JobFailedError

Filter = Mapping[str, Any]
"""A filter in engram's JSON filter language (docs/format/filter.md), e.g.
``{"tags": {"in": ["travel"]}, "importance": {"range": {"gte": 0.5}}}``."""

DEFAULT_URL = "http://127.0.0.1:7077"

Progress = Callable[[JSON], Any]
"""Called with a job (``{"id", "kind", "state", "done", "total", "unit", ...}``) after every poll;
the async client awaits it when it is a coroutine function."""


def drop_none(d: Mapping[str, Any]) -> JSON:
    return {k: v for k, v in d.items() if v is not None}


def _dict(m: Optional[Mapping[str, Any]]) -> Optional[JSON]:
    return dict(m) if m is not None else None


class Operations:
    """One plan per route of ``memctl serve``; the clients' methods of the same names run them."""

    # -- any route -----------------------------------------------------------------------------

    @staticmethod
    def request(method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None) -> Plan[Any]:
        """Send one request and decode its JSON answer (any route, for what has no method)."""
        return (yield from call(method, path, body, query))

    # -- service -------------------------------------------------------------------------------

    @staticmethod
    def health() -> Plan[JSON]:
        """``{"status": "ok"}`` while the server is up (no key needed)."""
        return (yield from call("GET", "/healthz"))

    @staticmethod
    def openapi() -> Plan[JSON]:
        """The OpenAPI document the server serves."""
        return (yield from call("GET", "/openapi.json"))

    @staticmethod
    def stats() -> Plan[JSON]:
        """Store statistics (admin right)."""
        return (yield from call("GET", "/v1/stats"))

    @staticmethod
    def sessions() -> Plan[List[JSON]]:
        """The sessions that hold memories, in the key's scope: ``{"name", "memories", "newest"}``."""
        return (yield from call("GET", "/v1/sessions"))["sessions"]

    # -- long-term memory ----------------------------------------------------------------------

    @staticmethod
    def remember(session: Optional[str], text: str, *, source: Optional[str] = None, tags: Optional[Sequence[str]] = None,
                 importance: Optional[float] = None, time: Optional[str] = None,
                 metadata: Optional[Mapping[str, Any]] = None, context: Optional[str] = None,
                 user_id: Optional[str] = None, agent_id: Optional[str] = None, run_id: Optional[str] = None) -> Plan[JSON]:
        """Remember text (chunked) in a session: ``{"ids", "merged", "superseded", "older"}``, one entry per chunk.

        ``user_id``, ``agent_id`` and ``run_id`` are mem0's scopes: the session is the user_id
        (session's other name), else the agent_id, else the run_id; the others are kept on the
        memories (metadata ``agent_id``, ``run_id``) and select them in recall, list and forget."""
        return (yield from call("POST", "/v1/remember", drop_none({
            "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id, "text": text,
            "context": context, "source": source, "tags": list(tags) if tags is not None else None,
            "importance": importance, "time": time, "metadata": _dict(metadata)})))

    @staticmethod
    def remember_messages(session: Optional[str], messages: Sequence[Mapping[str, Any]], *, infer: bool = False,
                          source: Optional[str] = None, tags: Optional[Sequence[str]] = None,
                          importance: Optional[float] = None, time: Optional[str] = None,
                          metadata: Optional[Mapping[str, Any]] = None, context: Optional[str] = None,
                          user_id: Optional[str] = None, agent_id: Optional[str] = None,
                          run_id: Optional[str] = None) -> Plan[JSON]:
        """Remember a conversation: messages ``{"role", "text", "time"?}``, oldest first (system ones
        are skipped). With ``infer`` only what the user states about themselves becomes memories
        (updating or deleting those it changes); without, every message is stored verbatim.
        Returns ``{"turns", "events": [{"event", "id", "memory", "previous"?, "time"}], "fallback"?}``
        (a key without the read right gets the events without texts). ``time`` is the time of
        messages without one; the scope IDs are ``remember``'s."""
        return (yield from call("POST", "/v1/remember", drop_none({
            "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id,
            "messages": [dict(m) for m in messages], "infer": infer or None, "context": context,
            "source": source, "tags": list(tags) if tags is not None else None,
            "importance": importance, "time": time, "metadata": _dict(metadata)})))

    @staticmethod
    def recall(query: str, session: Optional[str] = None, *, all_sessions: bool = False, k: Optional[int] = None,
               filter: Optional[Filter] = None, mode: Optional[str] = None, fusion: Optional[str] = None,
               vector_weight: Optional[float] = None, keyword_weight: Optional[float] = None,
               min_score: Optional[float] = None, no_decay: bool = False,
               source_weights: Optional[Mapping[str, float]] = None, no_touch: bool = False,
               prompt_tokens: Optional[int] = None, turns: Optional[Sequence[Mapping[str, Any]]] = None,
               min_relative: Optional[float] = None, as_of: Optional[str] = None, superseded: Optional[str] = None,
               user_id: Optional[str] = None, agent_id: Optional[str] = None, run_id: Optional[str] = None) -> Plan[JSON]:
        """Recall the memories best matching query: ``{"results": [memory + "score"], "prompt"?, "session_empty"?}``.

        ``min_score`` and ``min_relative`` are the floors (None: the server's defaults 0.05 and
        0.2; 0: none); ``as_of`` answers from what was true then (RFC 3339, a date, or an age
        such as ``30d``); ``superseded`` is demote (default), hide or keep. A result a newer
        memory changes carries ``stale`` and ``newer``. ``user_id``, ``agent_id`` and ``run_id``
        select a scope as ``remember`` stores it."""
        if session is None and not all_sessions and user_id is None and agent_id is None and run_id is None:
            raise ValueError("recall needs a session (or user_id, agent_id, run_id), or all_sessions=True")
        return (yield from call("POST", "/v1/recall", drop_none({
            "query": query, "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id,
            "all_sessions": all_sessions or None,
            "k": k, "filter": _dict(filter), "mode": mode, "fusion": fusion,
            "vector_weight": vector_weight, "keyword_weight": keyword_weight, "min_score": min_score,
            "min_relative": min_relative, "as_of": as_of, "superseded": superseded,
            "no_decay": no_decay or None, "source_weights": dict(source_weights) if source_weights else None,
            "no_touch": no_touch or None, "prompt_tokens": prompt_tokens,
            "turns": [dict(t) for t in turns] if turns else None})))

    @staticmethod
    def forget(ids: Optional[Sequence[str]] = None, *, session: Optional[str] = None, all: bool = False,
               filter: Optional[Filter] = None, purge: bool = False, user_id: Optional[str] = None,
               agent_id: Optional[str] = None, run_id: Optional[str] = None) -> Plan[int]:
        """Forget memories: by IDs (all must exist, or nothing is forgotten: NotFoundError names the
        others), every memory of a session or scope (``session=S``, or ``user_id``, ``agent_id``,
        ``run_id``, with ``all=True``), or those a filter selects (with a session: only there).
        Returns how many were forgotten. They go to the trash, where ``restore`` brings them back
        until the server purges them; ``purge=True`` deletes them for good instead."""
        return (yield from Operations.forget_answer(ids, session=session, all=all, filter=filter, purge=purge,
                                                    user_id=user_id, agent_id=agent_id, run_id=run_id))["forgotten"]

    @staticmethod
    def forget_answer(ids: Optional[Sequence[str]] = None, *, session: Optional[str] = None, all: bool = False,
                      filter: Optional[Filter] = None, purge: bool = False, user_id: Optional[str] = None,
                      agent_id: Optional[str] = None, run_id: Optional[str] = None) -> Plan[JSON]:
        """``forget``'s whole answer: ``{"forgotten", "restorable", "purge_after"?, "purged"?}``."""
        body = drop_none({"ids": list(ids) if ids else None, "session": session, "user_id": user_id,
                          "agent_id": agent_id, "run_id": run_id, "all": all or None,
                          "filter": _dict(filter), "purge": purge or None})
        return (yield from call("POST", "/v1/forget", body))

    @staticmethod
    def forgotten(session: Optional[str] = None) -> Plan[List[JSON]]:
        """The trash: forgotten memories (of one session), most recently forgotten first, each
        with ``forgotten`` and ``purge_after``."""
        return (yield from call("GET", "/v1/forgotten", query={"session": session})).get("memories") or []

    @staticmethod
    def restore(ids: Sequence[str]) -> Plan[int]:
        """Bring forgotten memories back under their IDs, with their history (all or nothing:
        NotFoundError names the IDs not in the trash). Returns how many."""
        return (yield from call("POST", "/v1/restore", {"ids": list(ids)}))["restored"]

    @staticmethod
    def purge_forgotten() -> Plan[int]:
        """Empty the trash for good (admin and write rights). Returns how many were purged."""
        return (yield from call("POST", "/v1/admin/forgotten/purge"))["purged"]

    @staticmethod
    def get(id: str, *, vector: bool = False) -> Plan[JSON]:
        """One memory by ID (NotFoundError when there is none, or it is outside the key's scope)."""
        return (yield from call("GET", "/v1/memories/" + quote(id), query={"vector": True} if vector else None))

    @staticmethod
    def list(session: Optional[str] = None, *, where: Optional[Filter] = None, tags: Optional[Sequence[str]] = None,
             source: Optional[str] = None, since: Optional[str] = None, until: Optional[str] = None,
             limit: Optional[int] = None, cursor: Optional[str] = None, user_id: Optional[str] = None,
             agent_id: Optional[str] = None, run_id: Optional[str] = None) -> Plan[JSON]:
        """One page of memories, newest first: ``{"memories": [...], "next_cursor"?}``. ``tags``
        must all be present; ``since``/``until`` (RFC 3339) bound the creation time; ``user_id``,
        ``agent_id`` and ``run_id`` select a scope as ``remember`` stores it."""
        return (yield from call("GET", "/v1/memories", query={
            "session": session, "user_id": user_id, "agent_id": agent_id, "run_id": run_id, "where": _dict(where), "tag": list(tags) if tags else None,
            "source": source, "since": since, "until": until, "limit": limit, "cursor": cursor}))

    @staticmethod
    def iter_memories(session: Optional[str] = None, *, page_size: int = 100, **filters: Any) -> Stream[JSON]:
        """Every memory ``list`` selects, page after page (``filters``: list's keyword arguments)."""
        cursor = None
        while True:
            page = yield from Operations.list(session, limit=page_size, cursor=cursor, **filters)
            for m in page["memories"]:
                yield Item(m)
            cursor = page.get("next_cursor")
            if not cursor:
                return

    @staticmethod
    def update(id: str, *, text: Optional[str] = None, source: Optional[str] = None,
               tags: Optional[Sequence[str]] = None, importance: Optional[float] = None,
               metadata: Optional[Mapping[str, Any]] = None) -> Plan[JSON]:
        """Replace fields of a memory (a new text is re-embedded); the earlier version goes to its history."""
        return (yield from call("PATCH", "/v1/memories/" + quote(id), drop_none({
            "text": text, "source": source, "tags": list(tags) if tags is not None else None, "importance": importance,
            "metadata": _dict(metadata)})))

    @staticmethod
    def delete(id: str) -> Plan[None]:
        """Delete one memory and its history (NotFoundError when there is none)."""
        yield from call("DELETE", "/v1/memories/" + quote(id))

    @staticmethod
    def history(id: str) -> Plan[List[JSON]]:
        """The earlier versions of a memory, oldest first: ``{"version", "change", "at", "memory"}``."""
        return (yield from call("GET", "/v1/memories/" + quote(id) + "/history"))["versions"]

    @staticmethod
    def revert(id: str, version: int) -> Plan[JSON]:
        """Bring version ``version`` back; the current one goes to the history."""
        return (yield from call("POST", "/v1/memories/" + quote(id) + "/revert", {"version": version}))

    @staticmethod
    def export(filter: Optional[Filter] = None, *, vectors: bool = False) -> Plan[List[JSON]]:
        """The memories a filter selects in the export format: the header line, then one memory per line."""
        text = yield from call("POST", "/v1/export", drop_none({"filter": _dict(filter), "vectors": vectors or None}))
        return [json.loads(line) for line in (text or "").splitlines() if line.strip()]

    @staticmethod
    def cleanup(*, older_than: Optional[str] = None, include_recalled: bool = False, session: Optional[str] = None,
                filter: Optional[Filter] = None, dry_run: bool = False) -> Plan[JSON]:
        """Move stale memories (default: 180 days, never recalled) of the key's sessions to the cold archive."""
        return (yield from call("POST", "/v1/cleanup", drop_none({
            "older_than": older_than, "include_recalled": include_recalled or None, "session": session,
            "filter": _dict(filter), "dry_run": dry_run or None})))

    # -- short-term memory ---------------------------------------------------------------------

    @staticmethod
    def context(session: str) -> Plan[JSON]:
        """The session's conversation: summary and recent turns."""
        return (yield from call("GET", "/v1/sessions/" + quote(session) + "/context"))

    @staticmethod
    def add_turn(session: str, role: str, text: str, *, time: Optional[str] = None) -> Plan[JSON]:
        """Append a turn; older turns are summarized past the token budget. Returns the conversation."""
        return (yield from call("POST", "/v1/sessions/" + quote(session) + "/turns",
                                drop_none({"role": role, "text": text, "time": time})))

    @staticmethod
    def distill(session: str) -> Plan[JSON]:
        """Turn the session's turns not yet distilled into long-term memories (what the user states
        about themselves): ``{"turns", "events", "fallback"?}``. Distilling again stores nothing new."""
        return (yield from call("POST", "/v1/sessions/" + quote(session) + "/distill", {}))

    @staticmethod
    def clear_context(session: str) -> Plan[None]:
        """Clear the session's conversation."""
        yield from call("DELETE", "/v1/sessions/" + quote(session) + "/context")

    # -- working memory ------------------------------------------------------------------------
    #
    # Task IDs are per session: session names the task's session, needed only when the key
    # sees tasks of this ID in several sessions (the server answers 400 otherwise).

    @staticmethod
    def tasks() -> Plan[List[JSON]]:
        """The tasks in the key's scope."""
        return (yield from call("GET", "/v1/tasks"))["tasks"]

    @staticmethod
    def start_task(goal: str, *, id: Optional[str] = None, session: Optional[str] = None) -> Plan[JSON]:
        """Start a task (``id``: a name of your own; ``session``: the session it works for)."""
        return (yield from call("POST", "/v1/tasks", drop_none({"goal": goal, "id": id, "session": session})))

    @staticmethod
    def task(id: str, *, session: Optional[str] = None) -> Plan[JSON]:
        """A task with its steps (NotFoundError when there is none)."""
        return (yield from call("GET", "/v1/tasks/" + quote(id), query={"session": session}))

    @staticmethod
    def update_step(id: str, name: str, status: str, *, result: Any = None, next: Optional[str] = None,
                    session: Optional[str] = None) -> Plan[JSON]:
        """Record a step (pending, running, done, failed or skipped; a JSON result) and the next step."""
        return (yield from call("POST", "/v1/tasks/" + quote(id) + "/steps",
                                drop_none({"name": name, "status": status, "result": result, "next": next}),
                                query={"session": session}))

    @staticmethod
    def finish_task(id: str, status: str = "done", *, session: Optional[str] = None) -> Plan[JSON]:
        """Finish a task: done (default) or failed."""
        return (yield from call("POST", "/v1/tasks/" + quote(id) + "/finish", {"status": status},
                                query={"session": session}))

    @staticmethod
    def delete_task(id: str, *, session: Optional[str] = None) -> Plan[None]:
        """Delete a task."""
        yield from call("DELETE", "/v1/tasks/" + quote(id), query={"session": session})

    # -- administration (admin right) ----------------------------------------------------------

    @staticmethod
    def jobs() -> Plan[List[JSON]]:
        """The running job and the last finished ones, newest first."""
        return (yield from call("GET", "/v1/jobs"))["jobs"]

    @staticmethod
    def job(id: str) -> Plan[JSON]:
        """A job's state and progress: ``{"id", "kind", "state", "done", "total", "unit", "result"?, "error"?}``."""
        return (yield from call("GET", "/v1/jobs/" + quote(id)))

    @staticmethod
    def cancel_job(id: str) -> Plan[JSON]:
        """Ask a job to stop at its next cancellation point."""
        return (yield from call("POST", "/v1/jobs/" + quote(id) + "/cancel"))

    @staticmethod
    def admin(operation: str, body: Optional[Mapping[str, Any]] = None, *, wait: bool = True,
              poll: float = 0.05, timeout: float = 600.0, progress: Optional[Progress] = None) -> Plan[JSON]:
        """Run an admin job (flush, check, compact, cleanup, archive/restore, backup, reembed) and,
        with ``wait``, wait for it as ``wait_job`` does; returns the job (its ``result`` when done)."""
        job = yield from call("POST", "/v1/admin/" + operation, _dict(body))
        if not wait or not isinstance(job, dict) or "id" not in job:
            return job
        return (yield from Operations.wait_job(job, poll=poll, timeout=timeout, progress=progress))

    @staticmethod
    def wait_job(job: Union[str, Mapping[str, Any]], *, poll: float = 0.05, timeout: float = 600.0,
                 progress: Optional[Progress] = None) -> Plan[JSON]:
        """Poll a job (its ID, or the job as started) until it ends, calling ``progress`` with it
        after every poll; returns the job, its ``result`` in ``result``. A job that failed or was
        cancelled raises JobFailedError; one still running after ``timeout`` seconds raises
        EngramError (status 0). Abandoning the wait (the awaiting task cancelled, or
        KeyboardInterrupt) asks the server to cancel the job before the exception goes on."""
        j: JSON = dict(job) if not isinstance(job, str) else (yield from Operations.job(job))
        id = j["id"]
        deadline = _time.monotonic() + timeout
        try:
            while True:
                if progress is not None:
                    yield Callback(progress, j)
                if j.get("state") not in ("queued", "running"):
                    break
                if _time.monotonic() > deadline:
                    raise EngramError(0, f"job {id} still {j.get('state')} after {timeout}s", "GET", "/v1/jobs/" + id)
                yield Sleep(poll)
                j = yield from Operations.job(id)
        except GeneratorExit:
            raise
        except BaseException as e:
            if not isinstance(e, Exception):  # CancelledError, KeyboardInterrupt: the caller gave up
                try:
                    yield from call("POST", "/v1/jobs/" + quote(id) + "/cancel", timeout=5.0)
                except Exception:  # noqa: BLE001 - best effort; the caller's exception matters
                    pass
            raise
        if j.get("state") != "done":
            raise JobFailedError(j)
        return j

    @staticmethod
    def archive() -> Plan[List[JSON]]:
        """The archived memories."""
        return (yield from call("GET", "/v1/admin/archive"))["memories"]

