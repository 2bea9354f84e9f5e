"""Where a secret may be sent: an API key travels only over https, or to this machine.

Used by every client that sends a key from the environment (the TTP teacher, the validation
judge): a plain-http endpoint on another host would expose the key to anyone on the path.
"""

from __future__ import annotations

import ipaddress
import urllib.parse

__all__ = ["check_key_transport", "is_loopback"]


def is_loopback(host: str | None) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if not host:
        return False
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_key_transport(url: str, setting: str) -> None:
    """Raise ``ValueError`` unless ``url`` may carry an API key.

    https anywhere, http only to a loopback host; ``setting`` names the config key of the URL
    so the message says what to change.
    """
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "https" or (scheme == "http" and is_loopback(parts.hostname)):
        return
    raise ValueError(
        f"{setting} {url!r}: an API key is sent only over https (or plain http to this "
        "machine, localhost/127.0.0.1/::1); use an https URL or unset the key's variable"
    )
