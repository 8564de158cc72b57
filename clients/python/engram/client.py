"""The blocking HTTP client: one method per route of ``memctl serve``.

The methods are the plans of ``_operations.Operations`` run with blocking I/O (urllib);
``AsyncClient`` (``aio.py``) runs the same plans with asyncio.
"""

from __future__ import annotations

import http.client
import socket
import ssl as _ssl
import time as _time
import urllib.error
import urllib.request
from typing import Any, Iterator, Optional, Union

from . import _protocol as p
from ._operations import DEFAULT_URL, Filter, Operations as O, Progress
from ._protocol import JSON
from .errors import (BadRequestError, ConflictError, EngramError, ForbiddenError, JobFailedError, NotFoundError,
                     UnauthorizedError)

__all__ = ["Client", "DEFAULT_URL", "JSON", "Filter", "Progress", "EngramError", "BadRequestError",
           "UnauthorizedError", "ForbiddenError", "NotFoundError", "ConflictError", "JobFailedError"]

Number = Union[int, float]


class Client:
    """A connection to ``memctl serve``.

    ``token`` is the bearer token or API key (``memctl keys add``); ``timeout`` bounds each
    request in seconds; ``ssl_context`` verifies an https server (default: the system's CAs;
    ``ssl.create_default_context(cafile=...)`` for a self-signed certificate). Every method
    returns the server's JSON answer as dicts and lists (memories in their one JSON form: id,
    session, text, source, tags, importance, metadata, created, updated, last_access,
    access_count) and raises an ``EngramError`` subclass on failure. A Client holds no
    connection between requests; it may be shared between threads.
    """

    def __init__(self, url: str = DEFAULT_URL, token: Optional[str] = None, timeout: float = 30.0, *,
                 ssl_context: Optional[_ssl.SSLContext] = None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.ssl_context = ssl_context

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def close(self) -> None:
        """Nothing to release (each request has its own connection); for symmetry with AsyncClient."""

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- running plans ---------------------------------------------------------------------

    def _run(self, plan: p.Plan[p.T]) -> p.T:
        return p.run(plan, self._perform)

    def _iterate(self, plan: p.Stream[p.T]) -> Iterator[p.T]:
        return p.iterate(plan, self._perform)

    def _perform(self, step: p.Step) -> Any:
        if isinstance(step, p.Request):
            return self._send(step)
        if isinstance(step, p.Sleep):
            _time.sleep(step.seconds)
            return None
        return step.fn(step.value)

    def _send(self, req: p.Request) -> p.Response:
        timeout = req.timeout or self.timeout
        r = urllib.request.Request(self.url + req.target, data=req.body, method=req.method,
                                   headers=dict(req.headers(self.token)))
        try:
            try:
                resp = urllib.request.urlopen(r, timeout=timeout, context=self.ssl_context)
            except urllib.error.HTTPError as e:  # a status outside 2xx: the plan reads the server's message
                resp = e
            with resp:
                return p.Response(resp.status or 0, dict(resp.headers.items()) if resp.headers else {}, resp.read())
        except urllib.error.URLError as e:
            if isinstance(e.reason, (socket.timeout, TimeoutError)):
                raise self._no_answer(req, timeout) from None
            raise EngramError(0, f"cannot reach {self.url}: {e.reason}", req.method, req.path) from None
        except (socket.timeout, TimeoutError):
            raise self._no_answer(req, timeout) from None
        except (OSError, http.client.HTTPException) as e:
            raise EngramError(0, f"connection to {self.url} broke: {e!r}", req.method, req.path) from None

    def _no_answer(self, req: p.Request, timeout: float) -> EngramError:
        return EngramError(0, f"no answer from {self.url} within {timeout}s", req.method, req.path)

    # -- the API (docs: _operations.Operations) -------------------------------------------------

    request = p.sync_method(O.request)

    health = p.sync_method(O.health)
    openapi = p.sync_method(O.openapi)
    stats = p.sync_method(O.stats)
    sessions = p.sync_method(O.sessions)

    remember = p.sync_method(O.remember)
    remember_messages = p.sync_method(O.remember_messages)
    recall = p.sync_method(O.recall)
    forget = p.sync_method(O.forget)
    forget_answer = p.sync_method(O.forget_answer)
    forgotten = p.sync_method(O.forgotten)
    restore = p.sync_method(O.restore)
    purge_forgotten = p.sync_method(O.purge_forgotten)
    get = p.sync_method(O.get)
    list = p.sync_method(O.list)
    iter_memories = p.sync_iter(O.iter_memories)
    update = p.sync_method(O.update)
    delete = p.sync_method(O.delete)
    history = p.sync_method(O.history)
    revert = p.sync_method(O.revert)
    export = p.sync_method(O.export)
    cleanup = p.sync_method(O.cleanup)

    context = p.sync_method(O.context)
    add_turn = p.sync_method(O.add_turn)
    distill = p.sync_method(O.distill)
    clear_context = p.sync_method(O.clear_context)

    tasks = p.sync_method(O.tasks)
    start_task = p.sync_method(O.start_task)
    task = p.sync_method(O.task)
    update_step = p.sync_method(O.update_step)
    finish_task = p.sync_method(O.finish_task)
    delete_task = p.sync_method(O.delete_task)

    jobs = p.sync_method(O.jobs)
    job = p.sync_method(O.job)
    cancel_job = p.sync_method(O.cancel_job)
    admin = p.sync_method(O.admin)
    wait_job = p.sync_method(O.wait_job)
    archive = p.sync_method(O.archive)
