"""SparkExecutor: fan work out to a Spark cluster through PySpark (imported lazily).

Only DataFrame operations are used (``mapInArrow``), so the same code runs on classic
Spark and on Spark Connect. Tasks receive pickled pure functions and items; tables carry
their FileIO configuration, never live storage clients. Our ``core`` package is shipped to
the executors as a zip; pyarrow, fastavro and fsspec must be installed there.
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import re
import shutil
import sys
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import core
from core.errors import EngineError, EngineUnavailableError, PaimonError
from core.runtime.executors.base import Executor, Work

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

_RESULT_SCHEMA = "idx long, result binary, error binary"
_OUR_ERROR = re.compile(r"core\.errors\.[A-Za-z]+Error: (.+)")
# A local JVM logs only errors, from its first line on (setLogLevel comes after start-up,
# when Spark's INFO/WARN banner is already on stderr); the gateway logger (PySpark's repl)
# at the root's level keeps Spark from announcing "Setting default log level".
_QUIET_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
logger.repl.name = org.apache.spark.api.python.PythonGatewayServer
logger.repl.level = error
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
"""


@contextmanager
def spark_failures() -> Iterator[None]:
    """Failures of Spark itself (py4j, pyspark: a job failed, the JVM died) become one
    EngineError with a hint, the same in every command and for each table of a glob run;
    our own errors travel through unchanged."""
    try:
        yield
    except PaimonError:
        raise
    except Exception as exc:
        if not _from_spark(exc):
            raise
        text = str(exc)
        ours = _OUR_ERROR.findall(text)
        if ours:
            # One of our errors raised in a task (e.g. corrupt metadata met on an executor):
            # its own words, not Spark's wrapper line.
            raise EngineError(f"on a Spark executor: {ours[-1].strip()}") from exc
        first = (text.strip().splitlines() or [type(exc).__name__])[0]
        raise EngineError(
            f"Spark failed: {first}",
            hint="if the Spark JVM died, it often ran out of memory: give it more, e.g. "
            "--spark-conf spark.driver.memory=4g (local mode runs every task in it); "
            "--debug shows the traceback",
        ) from exc


_SPARK_MODULES = ("py4j", "pyspark")


def _from_spark(exc: BaseException) -> bool:
    """Raised by py4j or pyspark, or by a plain call inside them: a JVM that died makes py4j's
    reconnect fail with a bare ConnectionRefusedError, which is no storage error."""
    if type(exc).__module__.startswith(_SPARK_MODULES):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_SPARK_MODULES):
            return True
        tb = tb.tb_next
    return False


def _quiet_accumulator_server(spark: Any) -> None:
    """PySpark's accumulator thread prints a traceback when the JVM it serves dies; the
    failure is reported once, as an EngineError, by the call that meets it."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda *_args: None


def _is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def _local_cores(master: str | None) -> int | None:
    """The worker threads of a local master (``local``, ``local[N]``, ``local[*]``,
    ``local[N, F]``), or None for any other master."""
    m = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", (master or "local[*]").strip())
    if m is None:
        return None
    n = m.group(1)
    return 1 if n is None else (os.cpu_count() or 1) if n == "*" else max(1, int(n))


def _package_zip() -> bytes:
    """``core`` as a zip, so executors import exactly the engine the driver runs."""
    root = Path(core.__file__).resolve().parent  # the package, wherever this module sits
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*.py")):
            zf.write(path, f"core/{path.relative_to(root).as_posix()}")
    return buf.getvalue()


def arrow_schema(ddl: str) -> Any:
    """The Arrow schema of a Spark DDL schema of plain columns (``"idx long, error binary"``):
    what a ``mapInArrow`` task yields and what its job declares, from one text."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "long": pa.int64(),
        "binary": pa.binary(),
        "boolean": pa.bool_(),
    }
    return pa.schema([(name, types[kind]) for name, kind in (c.split() for c in ddl.split(","))])


def _run_batches(fn_bytes: bytes, batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side: run the pickled function on each pickled item of each Arrow batch."""
    import pyarrow as pa

    fn = pickle.loads(fn_bytes)
    for batch in batches:
        idxs: list[int] = []
        results: list[bytes | None] = []
        errors: list[bytes | None] = []
        for idx, payload in zip(
            batch.column("idx").to_pylist(), batch.column("payload").to_pylist(), strict=True
        ):
            try:
                results.append(pickle.dumps(fn(pickle.loads(payload))))
                errors.append(None)
            except PaimonError as exc:
                results.append(None)
                errors.append(pickle.dumps(exc))
            idxs.append(idx)
        yield pa.RecordBatch.from_pydict(
            {"idx": idxs, "result": results, "error": errors},
            schema=arrow_schema(_RESULT_SCHEMA),
        )


class SparkExecutor(Executor):
    name = "spark"

    def __init__(self, spark: Any, parallelism: int | None = None, *, owned: bool = False) -> None:
        self.spark = spark
        self.owned = owned
        self.is_connect = "connect" in type(spark).__module__
        self._tempdir = ""
        self.parallelism = parallelism or self._default_parallelism()
        self._ship_package()

    @classmethod
    def start(
        cls,
        *,
        master: str | None = None,
        remote: str | None = None,
        conf: Mapping[str, str] | None = None,
        parallelism: int | None = None,
    ) -> SparkExecutor:
        """Start (or join) a Spark session; clear errors when pyspark or Java is missing."""
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise EngineUnavailableError(
                "--engine spark needs pyspark", hint="pip install 'paimon-cli[spark]'"
            ) from None
        local = remote is None and _is_local(master) or (remote or "").startswith("local")
        if local:
            if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
                raise EngineUnavailableError(
                    "--engine spark needs Java (a JVM) on this machine",
                    hint="install Java 17, e.g. apt-get install openjdk-17-jre-headless",
                )
            # Local workers must run this interpreter (it has pyarrow, fastavro, fsspec).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        options = {"spark.app.name": "paimon-cli"}
        if remote is None:
            options["spark.master"] = master or "local[*]"
            options["spark.ui.showConsoleProgress"] = "false"
            options["spark.ui.enabled"] = "false"
            cores = _local_cores(master)
            if cores is not None:
                # Spark's 200 shuffle partitions suit a cluster; on one machine every
                # distinct and join of a maintenance run then writes 200 partitions per
                # task for a few thousand rows. Two per core; --spark-conf wins.
                options["spark.sql.shuffle.partitions"] = str(2 * cores)
        log_config = _quiet_log_config() if local else None
        if log_config:
            # --spark-conf spark.driver.extraJavaOptions=... (applied after) replaces this.
            options["spark.driver.extraJavaOptions"] = (
                f"-Dlog4j2.configurationFile=file:{log_config}"
            )
        options.update(conf or {})
        builder = SparkSession.builder
        if remote is not None:
            builder = builder.remote(remote)
        for key, value in options.items():
            builder = builder.config(key, value)
        try:
            if remote is None:
                _start_driver_jvm(options)
            spark = builder.getOrCreate()
        except Exception as exc:  # noqa: BLE001 - JVM/gateway failures have many types
            raise EngineUnavailableError(f"cannot start Spark: {exc}") from exc
        finally:
            if log_config:
                Path(log_config).unlink(missing_ok=True)  # read once, at JVM start
        if remote is None:
            spark.sparkContext.setLogLevel("ERROR")
            _quiet_accumulator_server(spark)
        return cls(spark, parallelism, owned=True)

    def _default_parallelism(self) -> int:
        if not self.is_connect:
            return max(2, int(self.spark.sparkContext.defaultParallelism))
        return max(2, int(self.spark.conf.get("spark.default.parallelism", "8")))

    def _ship_package(self) -> None:
        import tempfile

        directory = tempfile.mkdtemp(prefix="paimon-cli-spark-")
        self._tempdir = directory  # removed on close()
        path = os.path.join(directory, "paimon_cli_core.zip")
        with open(path, "wb") as fh:
            fh.write(_package_zip())
        if self.is_connect:
            self.spark.addArtifacts(path, pyfile=True)
        else:
            self.spark.sparkContext.addPyFile(path)

    def dataframe(
        self, rows: list[tuple[Any, ...]], schema: str, partitions: int | None = None
    ) -> Any:
        df = self.spark.createDataFrame(rows, schema)
        n = partitions or min(max(len(rows), 1), self.parallelism)
        return df.repartition(n)

    def _results(self, fn: Callable[[T], R], batch: list[T], work: Work) -> Iterator[R]:
        """One Spark job, whatever the ``work`` (executors are processes already); the
        first error an item raised is re-raised where its result would be."""
        with spark_failures():
            if not batch:
                return
            rows = [(i, pickle.dumps(item)) for i, item in enumerate(batch)]
            df = self.dataframe(rows, "idx long, payload binary")
            fn_bytes = _dumps_function(fn)
            out = df.mapInArrow(lambda it: _run_batches(fn_bytes, it), _RESULT_SCHEMA).collect()
            out.sort(key=lambda r: r["idx"])
            for row in out:
                if row["error"] is not None:
                    raise pickle.loads(row["error"])
                yield pickle.loads(row["result"])

    def imap(self, fn: Callable[[T], R], items: Iterable[T], *, work: Work = "io") -> Iterator[R]:
        """One Spark job, as ``map``: the driver only maps what it keeps small (re-checks)."""
        return iter(self.map(fn, items))

    def close(self) -> None:
        if self.owned:
            self.owned = False
            try:
                self.spark.stop()
            except Exception as exc:  # noqa: BLE001 - a JVM that died cannot be stopped
                logger.debug("stopping Spark failed: %s", exc)
        shutil.rmtree(self._tempdir, ignore_errors=True)


# What the JVM prints on its stderr at every start: Spark 4's notice of the incubating
# Vector API, and the announcement of options taken from the environment (containers set
# JAVA_TOOL_OPTIONS for memory limits); no JVM option silences them, and a quiet run from
# cron must print nothing, so the driver's stderr goes through a filter.
_JVM_NOISE = (
    b"WARNING: Using incubator modules: ",
    b"Picked up JAVA_TOOL_OPTIONS: ",
    b"Picked up _JAVA_OPTIONS: ",
    b"NOTE: Picked up JDK_JAVA_OPTIONS: ",
)


def _start_driver_jvm(options: Mapping[str, str]) -> None:
    """Launch the driver JVM as PySpark would (same spark-submit, same settings), but with
    its stderr going through ``_forward_stderr``; the session then joins this JVM. Nothing
    happens when a JVM is already there (a session of the same process, or a gateway
    given through PYSPARK_GATEWAY_PORT)."""
    import threading

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if getattr(SparkContext, "_gateway", None) is not None or "PYSPARK_GATEWAY_PORT" in (
        os.environ
    ):
        return
    conf = SparkConf(loadDefaults=False).setAll(list(options.items()))
    # Our own pipe, read from before the JVM starts: what a JVM that fails to start says
    # (a wrong Java, a bad option) reaches stderr before our error does.
    read_end, write_end = os.pipe()
    forward = threading.Thread(
        target=_forward_stderr,
        args=(os.fdopen(read_end, "rb"),),
        name="spark-jvm-stderr",
        daemon=True,
    )
    forward.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})  # type: ignore[no-untyped-call]
    except BaseException:
        os.close(write_end)
        forward.join(timeout=5)  # the JVM exited: its last words first
        raise
    os.close(write_end)  # the JVM holds its own copy: the pipe ends when the JVM does
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _forward_stderr(stream: Any) -> None:
    """The JVM's stderr, line by line, to ours (file descriptor 2, where it went before),
    without the start-up notices in ``_JVM_NOISE``."""
    with stream:
        for line in iter(stream.readline, b""):
            if not line.startswith(_JVM_NOISE):
                os.write(2, line)


def _dumps_function(fn: Callable[..., Any]) -> bytes:
    from pyspark import cloudpickle

    data: bytes = cloudpickle.dumps(fn)  # type: ignore[no-untyped-call]
    return data


def _quiet_log_config() -> str:
    """A log4j2 configuration file for a local JVM that logs errors only."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="paimon-cli-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as fh:
        fh.write(_QUIET_LOG4J2)
    return path
