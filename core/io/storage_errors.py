"""What a storage failure tells the user: which setting, credential or library to fix
(the endpoint of each store, where its credentials come from, the extra to install).
``core.io.fileio`` and ``core.io.s3`` raise these errors; nothing here touches storage."""

from __future__ import annotations

import functools
import importlib

from core.errors import StorageAccessError, StorageError
from core.io.locations import protocol_of
from core.io.retry import is_unreachable, summary


def key_error(path: str, code: str, message: str) -> StorageError:
    text = f"cannot delete {path}: {code or 'error'}{': ' + message if message else ''}"
    if code in ("AccessDenied", "AllAccessDisabled", "AccountProblem", "InvalidAccessKeyId"):
        return StorageAccessError(text, hint=permission_hint(protocol_of(path)))
    return StorageError(text)


# What each store needs to be reached: its endpoint setting.
_ENDPOINT_SETTINGS = {
    "s3": "--fs-option endpoint_url=... (or AWS_ENDPOINT_URL)",
    "gs": "--fs-option endpoint_url=...",
    "abfs": "--fs-option account_name=... (or AZURE_STORAGE_ACCOUNT_NAME)",
    "oss": "--fs-option endpoint=...",
    "hdfs": "the namenode host and port in the path (hdfs://host:port/...)",
}
_ENDPOINT_SETTINGS |= {
    "s3a": _ENDPOINT_SETTINGS["s3"],
    "gcs": _ENDPOINT_SETTINGS["gs"],
    "az": _ENDPOINT_SETTINGS["abfs"],
    "viewfs": _ENDPOINT_SETTINGS["hdfs"],
}


def unreachable_hint(path: str, tls: bool) -> str:
    endpoint = _ENDPOINT_SETTINGS.get(protocol_of(path), "the storage endpoint")
    if tls:
        return (
            f"the endpoint does not speak TLS or its certificate is not trusted: check "
            f"{endpoint} (http:// for an endpoint without TLS), or trust its certificate "
            "(AWS_CA_BUNDLE, REQUESTS_CA_BUNDLE or SSL_CERT_FILE)"
        )
    return (
        f"check {endpoint}, this machine's network and DNS, and proxy settings "
        "(HTTPS_PROXY, NO_PROXY)"
    )


# Native client libraries that fail to load raise OSError listing every place they looked.
_NATIVE_LIBRARY_TEXT = ("Unable to load libjvm", "Unable to load libhdfs", "dlopen(")


def open_error(protocol: str, path: str, exc: OSError) -> StorageError:
    """The error for a client that could not be created (HDFS connects and loads libjvm
    and libhdfs in its constructor)."""
    if any(text in str(exc) for text in _NATIVE_LIBRARY_TEXT):
        return StorageAccessError(
            f"cannot open {protocol}:// storage: a native library did not load ({summary(exc)})",
            hint="HDFS through pyarrow needs a JVM and libhdfs: set JAVA_HOME to a JDK, "
            "HADOOP_HOME (or ARROW_LIBHDFS_DIR to the directory of libhdfs.so) and "
            "CLASSPATH=$(hadoop classpath --glob)",
        )
    if is_unreachable(exc):
        return StorageAccessError(
            f"cannot reach the storage for {path}: {summary(exc)}",
            hint=unreachable_hint(path, tls=False),
        )
    return StorageError(f"cannot open storage for {protocol}://: {summary(exc)}")


def install_hint(protocol: str) -> str | None:
    extra = {
        "s3": "s3",
        "s3a": "s3",
        "gs": "gcs",
        "gcs": "gcs",
        "abfs": "azure",
        "az": "azure",
        "oss": "oss",
    }.get(protocol)
    return f"install the storage extra: pip install 'paimon-cli[{extra}]'" if extra else None


# The "no usable credentials" errors of each storage library, by module and class name.
_CREDENTIAL_ERRORS = (
    ("botocore.exceptions", "NoCredentialsError"),
    ("botocore.exceptions", "PartialCredentialsError"),
    ("botocore.exceptions", "CredentialRetrievalError"),
    ("botocore.exceptions", "NoAuthTokenError"),
    ("google.auth.exceptions", "DefaultCredentialsError"),
    ("google.auth.exceptions", "RefreshError"),
    ("azure.core.exceptions", "ClientAuthenticationError"),
)


@functools.cache
def credential_errors() -> tuple[type[BaseException], ...]:
    """Those of the installed libraries (they are not OSErrors, so nothing else would
    translate them)."""
    found: list[type[BaseException]] = []
    for module_name, class_name in _CREDENTIAL_ERRORS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, class_name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


# Where each store's credentials come from: environment variables or --fs-option keys.
_CREDENTIAL_SOURCES = {
    "s3": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or pass "
    "--fs-option key=... --fs-option secret=...; a public bucket: --fs-option anon=true",
    "gs": "set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, or pass "
    "--fs-option token=...",
    "abfs": "set AZURE_STORAGE_CONNECTION_STRING (or AZURE_STORAGE_ACCOUNT_NAME and "
    "AZURE_STORAGE_ACCOUNT_KEY), or pass --fs-option account_name=... --fs-option "
    "account_key=...",
    "oss": "pass --fs-option key=... --fs-option secret=... --fs-option endpoint=...",
}
_CREDENTIAL_SOURCES |= {
    "s3a": _CREDENTIAL_SOURCES["s3"],
    "gcs": _CREDENTIAL_SOURCES["gs"],
    "az": _CREDENTIAL_SOURCES["abfs"],
}


def credentials_hint(protocol: str) -> str:
    return _CREDENTIAL_SOURCES.get(
        protocol, "pass the storage credentials with --fs-option KEY=VALUE"
    )


def permission_hint(protocol: str) -> str:
    return (
        "the credentials in use lack this permission: grant it (bucket or IAM policy), "
        "or use other credentials: " + credentials_hint(protocol)
    )
