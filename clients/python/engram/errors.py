"""The exceptions of the engram clients, sync and async alike."""

from __future__ import annotations

from typing import Any, Dict, Optional


class EngramError(Exception):
    """A request the server refused or failed, or one that got no answer.

    ``status`` is the HTTP status (0: no answer: the server could not be reached, the
    connection broke, or the timeout passed), ``message`` the server's own message, ``body``
    the server's JSON error object where it sent one (``{"error", "stored_ids"?}``).
    """

    def __init__(self, status: int, message: str, method: str = "", path: str = "",
                 body: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(f"{method} {path}: {status}: {message}" if method else f"{status}: {message}")
        self.status = status
        self.message = message
        self.method = method
        self.path = path
        self.body = body


class BadRequestError(EngramError):
    """400: invalid input or filter; nothing was written."""


class UnauthorizedError(EngramError):
    """401: no key, or a key the server does not know (``token=``)."""


class ForbiddenError(EngramError):
    """403: the key lacks the right or the session is outside its scope."""


class NotFoundError(EngramError):
    """404: no memory, task, version or route by that name (the message names it)."""


class ConflictError(EngramError):
    """409: another admin job is running."""


class JobFailedError(EngramError):
    """An admin job that ended failed or cancelled; ``job`` is its last state."""

    def __init__(self, job: Dict[str, Any]) -> None:
        super().__init__(500, job.get("error") or f"job {job.get('id')} {job.get('state')}",
                         "GET", f"/v1/jobs/{job.get('id')}")
        self.job = job


_BY_STATUS = {400: BadRequestError, 401: UnauthorizedError, 403: ForbiddenError, 404: NotFoundError,
              409: ConflictError}


def error_for(status: int, message: str, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> EngramError:
    """The exception for an answer with this status: the subclass named for it, else EngramError."""
    return _BY_STATUS.get(status, EngramError)(status, message, method, path, body)
