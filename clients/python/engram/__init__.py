"""Python client for the engram memory service (``memctl serve``).

``Client`` covers the whole HTTP API (docs: ``GET /openapi.json``); ``Memory`` is a
mem0-style facade (add, search, get_all, get, update, delete, history) over it, so code
written for mem0's ``Memory`` ports with few changes. Standard library only.
"""

from .client import Client, EngramError, NotFoundError, ForbiddenError, BadRequestError
from .memory import Memory

__all__ = ["Client", "Memory", "EngramError", "NotFoundError", "ForbiddenError", "BadRequestError"]
__version__ = "0.1.0"
