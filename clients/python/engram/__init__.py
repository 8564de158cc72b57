"""Python client for the engram memory service (``memctl serve``).

``Client`` covers the whole HTTP API (docs: ``GET /openapi.json``); ``AsyncClient`` is the same
for asyncio (non-blocking, keep-alive connections). ``Memory`` and ``AsyncMemory`` are a
mem0-style facade (add, search, get_all, get, update, delete, history) over them, so code
written for mem0's ``Memory`` ports with few changes. Standard library only.
"""

from .aio import AsyncClient
from .client import Client
from .errors import (BadRequestError, ConflictError, EngramError, ForbiddenError, JobFailedError, NotFoundError,
                     UnauthorizedError)
from .memory import AsyncMemory, Memory

__all__ = ["Client", "AsyncClient", "Memory", "AsyncMemory", "EngramError", "BadRequestError", "UnauthorizedError",
           "ForbiddenError", "NotFoundError", "ConflictError", "JobFailedError"]
__version__ = "0.1.0"
