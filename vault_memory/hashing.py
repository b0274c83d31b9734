"""The one content hash: sha256 as hex, of bytes or of text encoded as UTF-8.

Note files are identified by the hash of their bytes, chunk vectors are cached by the
hash of their text, and a compare-and-swap write checks the hash it read: all the same
function, so two callers can never disagree about what "unchanged" means.
"""

from __future__ import annotations

import hashlib


def sha256_hex(data: bytes | str) -> str:
    """sha256 of `data` (str is encoded as UTF-8), as 64 hex characters."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


__all__ = ["sha256_hex"]
