"""reactor_client: a Python client for reactord, the server hosting one shared JSON document.

- `Client`: synchronous HTTP (standard library only): `fire`, `fire_batch`, `state`,
  `state_with_version`, `health`, over kept-alive connections shared between threads.
- `AsyncClient`: the same calls for asyncio (`await client.fire(...)`), standard library only too.
- `Client.subscribe(...)`: an async WebSocket subscription that keeps the state locally from a
  snapshot and RFC 6902 patches, reconnects and resumes by itself, and can fire events (needs the
  `websockets` package, imported only when subscribing).
- `ReactorError` and its subclasses carry reactord's RFC 9457 problems.
- `apply_patch`: the RFC 6902 applier the subscription uses.
"""

from .async_client import AsyncClient
from .client import Client, Response
from .errors import (
    ReactorClientError,
    ReactorConnectionError,
    ReactorError,
    ReactorProtocolError,
    ReactorServerError,
    ReactorTimeoutError,
)
from .patch import PatchConflict, PatchError, apply_patch, format_pointer, json_equal, parse_pointer, resolve_pointer

__version__ = "0.1.0"

__all__ = [
    "Client",
    "AsyncClient",
    "Response",
    "ReactorError",
    "ReactorClientError",
    "ReactorServerError",
    "ReactorConnectionError",
    "ReactorTimeoutError",
    "ReactorProtocolError",
    "PatchError",
    "PatchConflict",
    "apply_patch",
    "json_equal",
    "parse_pointer",
    "format_pointer",
    "resolve_pointer",
]
