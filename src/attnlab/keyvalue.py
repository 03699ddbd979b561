"""The one parser of ``KEY=VALUE`` items on the command line: ``--set`` (one value) and ``--grid``
(``KEY=V1,V2,...``) both split their items here, so both refuse the same malformed item with the
same kind of line."""

from __future__ import annotations

from collections.abc import Iterable

from .errors import AttnlabError, ConfigError


def pairs(
    items: Iterable[str], option: str, form: str = "key=value", error: type[AttnlabError] = ConfigError
) -> list[tuple[str, str]]:
    """``["d_model=64", " scaled = false"]`` -> ``[("d_model", "64"), ("scaled", "false")]``: each item
    split at its first ``=``, key and value stripped. An item without ``=`` or without a key is refused
    (``error``, naming ``option`` and the ``form`` it expects); what a key or value may be is the caller's."""
    out = []
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise error(f"{option} expects {form}, got {item!r}")
        out.append((key.strip(), raw.strip()))
    return out
