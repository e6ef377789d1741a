"""The TLS setting for an HTTP client of Baton's own API: no CA bundle for a plain URL.

`httpx.Client()` loads the whole CA bundle for its default TLS context, about 20 ms of
CPU per client: paid by every `baton run` (twice: its calls and its event stream) and by
the batch for each feature, all to talk plain HTTP to 127.0.0.1. A plain `http://` URL
gets a verifying context with no CAs instead (0.1 ms): a redirect to `https://` then
fails verification rather than passing unchecked. An `https://` URL keeps httpx's default.
"""

from __future__ import annotations

import ssl

__all__ = ["tls_verify_for"]


def tls_verify_for(url: str) -> ssl.SSLContext | bool:
    """What to pass as httpx's `verify=` for a client of `url` (see the module's note)."""
    if url.lower().startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies; trusts nothing
    return True
