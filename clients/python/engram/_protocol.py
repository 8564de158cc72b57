"""The part of the clients that does no I/O: requests, answers, and how operations run.

Every operation of the API (``_operations.py``) and of the mem0-style facade (``memory.py``)
is written once, as a *plan*: a generator that yields the steps it needs (a ``Request`` to
send, a ``Sleep``, a ``Callback`` to call) and is sent each step's outcome (the ``Response``,
or the exception it raised, thrown in at the ``yield``). It builds the requests and reads
the answers itself, so a field is added in one place. A client only performs steps: ``Client``
with blocking sockets, ``AsyncClient`` with asyncio streams. ``sync_method`` and
``async_method`` turn a plan into a method of either kind with the plan's own signature and
doc string.
"""

from __future__ import annotations

import functools
import inspect
import json
import urllib.parse
from typing import (TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Coroutine, Dict, Generator, Generic,
                    Iterator, List, Mapping, Optional, Tuple, TypeVar, Union, cast, overload)

from .errors import EngramError, error_for

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import ParamSpec, Protocol

    P = ParamSpec("P")
    R = TypeVar("R", covariant=True)

    class Method(Protocol[P, R]):
        """What sync_method and the others make, as type checkers see it: called on an
        instance, it takes the plan's parameters and returns R."""

        @overload
        def __get__(self, obj: None, owner: Any) -> "Method[P, R]": ...

        @overload
        def __get__(self, obj: object, owner: Any) -> Callable[P, R]: ...
JSON = Dict[str, Any]
VERSION = "0.1.0"
USER_AGENT = "engram-python/" + VERSION


class Request:
    """One HTTP request: ``target`` is the path and query (the base URL's path goes before it)."""

    __slots__ = ("method", "path", "target", "body", "timeout")

    def __init__(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None, body: Any = None,
                 timeout: Optional[float] = None) -> None:
        self.method = method
        self.path = path
        self.target = path + encode_query(query)
        # The server takes every POST, PUT and PATCH as carrying a JSON body.
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = {}
        self.body: Optional[bytes] = None if body is None else json.dumps(body).encode("utf-8")
        self.timeout = timeout  # None: the client's

    def headers(self, token: Optional[str]) -> List[Tuple[str, str]]:
        """The headers every client sends (a transport adds Host and Content-Length)."""
        h = [("User-Agent", USER_AGENT), ("Accept", "application/json")]
        if self.body is not None:
            h.append(("Content-Type", "application/json"))
        if token:
            if any(c in token for c in "\r\n\0"):
                raise ValueError("the token holds a line break")
            h.append(("Authorization", "Bearer " + token))
        return h

    def __repr__(self) -> str:
        return f"Request({self.method} {self.target})"


class Response:
    """An answer: status, headers (names in lower case, trailers included) and the whole body."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body


class Sleep:
    """A step: wait this many seconds (``asyncio.sleep`` in the async client)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Callback:
    """A step: call ``fn(value)``; the async client awaits what it returns where that is awaitable."""

    __slots__ = ("fn", "value")

    def __init__(self, fn: Callable[[Any], Any], value: Any) -> None:
        self.fn = fn
        self.value = value


class Item(Generic[T]):
    """A step of an iterating plan: hand ``value`` to the caller's loop."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value


Step = Union[Request, Sleep, Callback]
Plan = Generator[Step, Any, T]
"""A plan that returns T."""
Stream = Generator[Union[Step, Item[T]], Any, None]
"""A plan that hands out Ts, for ``for`` (sync) or ``async for`` (async)."""


def encode_query(query: Optional[Mapping[str, Any]]) -> str:
    """``?k=v&...``: None is left out, a list repeats its key, booleans are true/false, dicts and lists JSON."""
    if not query:
        return ""
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
    return "?" + urllib.parse.urlencode(pairs) if pairs else ""


def quote(segment: str) -> str:
    """A path segment (an ID, a session name) with everything but unreserved characters escaped."""
    return urllib.parse.quote(segment, safe="")


def check(req: Request, resp: Response) -> Response:
    """resp, or the typed EngramError for a status outside 2xx with the server's message."""
    if 200 <= resp.status < 300:
        return resp
    raw = resp.body.decode("utf-8", "replace")
    body = None
    try:
        decoded = json.loads(raw)
        if isinstance(decoded, dict):
            body = decoded
    except ValueError:
        pass
    msg = str(body["error"]) if body and "error" in body else (raw.strip() or f"HTTP {resp.status}")
    raise error_for(resp.status, msg, req.method, req.path, body)


def decode(req: Request, resp: Response) -> Any:
    """The answer's JSON (None for an empty body; the text where the answer is of another type)."""
    if not resp.body:
        return None
    text = resp.body.decode("utf-8", "replace")
    media = resp.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        return text  # JSON Lines (export), text (metrics)
    try:
        return json.loads(text)
    except ValueError as e:
        raise EngramError(resp.status, f"the answer is not JSON ({e}): {text[:200]!r}", req.method, req.path) from None


def call(method: str, path: str, body: Any = None, query: Optional[Mapping[str, Any]] = None,
         timeout: Optional[float] = None) -> Plan[Any]:
    """A plan of one request: its decoded JSON answer, or the typed EngramError."""
    req = Request(method, path, query, body, timeout)
    resp = yield req
    return decode(req, check(req, resp))


# -- running plans ---------------------------------------------------------------------------
#
# A driver sends a plan each step's outcome, or throws the step's exception into it (the
# plan may catch it: NotFoundError for "no such memory", CancelledError to cancel a job it
# waits for), until the plan returns.


def run(plan: Plan[T], perform: Callable[[Step], Any]) -> T:
    """Run a plan with blocking steps."""
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            step = plan.send(value) if error is None else plan.throw(error)
        except StopIteration as stop:
            return stop.value
        value = error = None
        try:
            value = perform(step)
        except BaseException as e:  # noqa: B036 - handed to the plan, which re-raises it
            error = e


async def arun(plan: Plan[T], perform: Callable[[Step], Awaitable[Any]]) -> T:
    """Run a plan with awaited steps."""
    value: Any = None
    error: Optional[BaseException] = None
    while True:
        try:
            step = plan.send(value) if error is None else plan.throw(error)
        except StopIteration as stop:
            return stop.value
        value = error = None
        try:
            value = await perform(step)
        except BaseException as e:  # noqa: B036 - CancelledError included: the plan decides
            error = e


def iterate(plan: Stream[T], perform: Callable[[Step], Any]) -> Iterator[T]:
    """Run an iterating plan with blocking steps, yielding its items."""
    value: Any = None
    error: Optional[BaseException] = None
    try:
        while True:
            try:
                step = plan.send(value) if error is None else plan.throw(error)
            except StopIteration:
                return
            value = error = None
            if isinstance(step, Item):
                yield step.value
                continue
            try:
                value = perform(step)
            except BaseException as e:  # noqa: B036
                error = e
    finally:
        plan.close()


async def aiterate(plan: Stream[T], perform: Callable[[Step], Awaitable[Any]]) -> AsyncIterator[T]:
    """Run an iterating plan with awaited steps, yielding its items."""
    value: Any = None
    error: Optional[BaseException] = None
    try:
        while True:
            try:
                step = plan.send(value) if error is None else plan.throw(error)
            except StopIteration:
                return
            value = error = None
            if isinstance(step, Item):
                yield step.value
                continue
            try:
                value = await perform(step)
            except BaseException as e:  # noqa: B036
                error = e
    finally:
        plan.close()


# -- plans as methods ------------------------------------------------------------------------
#
# The methods take the plan's signature and doc string, with self in front, so help(),
# inspect.signature and editors show the real parameters; type checkers see them through
# ParamSpec. The owner supplies _run / _iterate (sync) or coroutine _run / async _iterate.


def _as_method(method: Callable[..., Any], plan: Callable[..., Any], iterator: str = "") -> None:
    functools.update_wrapper(method, plan)
    del method.__wrapped__  # type: ignore[attr-defined]  # the signature below is the one to show
    sig = inspect.signature(plan)
    ret = sig.return_annotation
    if isinstance(ret, str):  # "Plan[X]" returns X; "Stream[X]" hands out Xs
        if ret.startswith("Plan[") and ret.endswith("]"):
            ret = ret[len("Plan["):-1]
        elif ret.startswith("Stream[") and ret.endswith("]"):
            ret = f"{iterator}[{ret[len('Stream['):-1]}]"
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = sig.replace(parameters=[self_param, *sig.parameters.values()],  # type: ignore[attr-defined]
                                       return_annotation=ret)


def sync_method(plan: Callable[P, Plan[T]]) -> Method[P, T]:
    """A blocking method that runs plan."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._run(plan(*args, **kwargs))
    _as_method(method, plan)
    return cast("Method[P, Any]", method)


def async_method(plan: Callable[P, Plan[T]]) -> Method[P, Coroutine[Any, Any, T]]:
    """A coroutine method that runs plan."""
    async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._run(plan(*args, **kwargs))
    _as_method(method, plan)
    return cast("Method[P, Any]", method)


def sync_iter(plan: Callable[P, Stream[T]]) -> Method[P, Iterator[T]]:
    """A method returning an iterator over plan's items."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._iterate(plan(*args, **kwargs))
    _as_method(method, plan, "Iterator")
    return cast("Method[P, Any]", method)


def async_iter(plan: Callable[P, Stream[T]]) -> Method[P, AsyncIterator[T]]:
    """A method returning an async iterator over plan's items."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._iterate(plan(*args, **kwargs))
    _as_method(method, plan, "AsyncIterator")
    return cast("Method[P, Any]", method)
