"""The CLI's last line of defence: failures become one message and an exit code."""

from __future__ import annotations

import pytest
import typer
from support.fixtures import dev_dependency

from core.errors import EngineError, StorageError
from core.runtime.executors.spark import spark_failures
from paimon_cli.errors import guard

Py4JNetworkError = type("Py4JNetworkError", (Exception,), {"__module__": "py4j.protocol"})


def test_a_dead_spark_jvm_is_a_message_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    with (
        pytest.raises(typer.Exit) as exit_info,
        guard(as_json=False, debug=False),
        spark_failures(),
    ):
        raise Py4JNetworkError("Error while sending or receiving\nJava stack ...")
    assert exit_info.value.exit_code == 1
    err = capsys.readouterr().err
    assert "Spark failed: Error while sending or receiving" in err
    assert "spark.driver.memory" in err and "Traceback" not in err and "Java stack" not in err


def test_spark_failures_become_engine_errors_others_pass_through() -> None:
    with pytest.raises(EngineError) as info, spark_failures():
        raise Py4JNetworkError("Error while sending or receiving")
    assert info.value.kind == "engine_error"  # a PaimonError: glob runs report it per table
    with pytest.raises(StorageError), spark_failures():
        raise StorageError("ours")
    with pytest.raises(ZeroDivisionError), spark_failures():
        raise ZeroDivisionError("not Spark's")


def test_an_unexpected_error_is_reported_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exit_info, guard(as_json=True, debug=False):
        raise ZeroDivisionError("boom")
    assert exit_info.value.exit_code == 1
    err = capsys.readouterr().err
    assert '"kind": "internal_error"' in err and "Traceback" not in err


def test_spark_executor_close_survives_a_dead_session() -> None:
    from core.runtime.executors.spark import SparkExecutor

    class DeadSession:
        def stop(self) -> None:
            raise Py4JNetworkError("SparkSession does not exist in the JVM")

    executor = SparkExecutor.__new__(SparkExecutor)
    executor.spark, executor.owned, executor._tempdir = DeadSession(), True, "/nonexistent-dir"
    executor.close()  # no exception
    assert executor.owned is False


def test_s3_without_credentials_is_a_hint_not_a_bug(run) -> None:  # type: ignore[no-untyped-def]
    dev_dependency("s3fs")
    env = {
        "AWS_ACCESS_KEY_ID": None,
        "AWS_SECRET_ACCESS_KEY": None,
        "AWS_SESSION_TOKEN": None,
        "AWS_PROFILE": None,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
        "AWS_CONFIG_FILE": "/nonexistent/config",
    }
    result = run(
        "inspect",
        "s3://nocreds/wh/db.db/t",
        "--fs-option",
        "endpoint_url=http://127.0.0.1:9",
        env=env,
    )
    assert result.exit_code == 1
    assert "no usable credentials" in result.stderr and "AWS_ACCESS_KEY_ID" in result.stderr
    assert "bug" not in result.stderr and "Traceback" not in result.stderr
