"""Which Avro codecs this install can decode, and a clear error when one is missing.

Paimon writes Avro manifests and data files with the codecs Avro (Java) offers: null,
deflate, snappy, bzip2, xz and zstandard (``manifest.compression`` defaults to zstd).
fastavro decodes deflate, bzip2 and xz with the standard library; snappy and zstandard
need the libraries paimon-cli declares (cramjam; backports.zstd before Python 3.14). An
install without them (``pip install --no-deps``, a hand-made environment) would otherwise
see every zstd manifest as corrupt metadata, which it is not.
"""

from __future__ import annotations

import functools
import io

from core.errors import MissingDependencyError

# Avro codec -> the package paimon-cli's dependencies install for it.
_CODEC_PACKAGES = {"snappy": "cramjam", "zstandard": "backports.zstd"}

_PROBE_SCHEMA = {"type": "record", "name": "probe", "fields": [{"name": "a", "type": "int"}]}


@functools.cache
def avro_codec_available(codec: str) -> bool:
    """True if fastavro can both write and read ``codec`` here (a one-row round trip)."""
    import fastavro

    buf = io.BytesIO()
    try:
        fastavro.writer(buf, fastavro.parse_schema(_PROBE_SCHEMA), [{"a": 1}], codec=codec)
        return list(fastavro.reader(io.BytesIO(buf.getvalue()))) == [{"a": 1}]
    except ValueError:
        return False


def require_avro_codec(codec: str, what: str) -> None:
    """Raise MissingDependencyError if the Avro ``codec`` of ``what`` (a file read, or the
    files about to be written) is not usable here."""
    if codec == "null" or avro_codec_available(codec):
        return
    package = _CODEC_PACKAGES.get(codec)
    needs = f"the Python package {package}" if package else "a codec library fastavro supports"
    raise MissingDependencyError(
        f"{what}: the Avro codec {codec!r} is not usable in this installation, it needs {needs}",
        hint="reinstall with dependencies (pip install paimon-cli) or "
        + (f"pip install {package}" if package else "install the codec library fastavro names"),
    )
