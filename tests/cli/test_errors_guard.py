"""The CLI's last line of defence: failures become one message and an exit code."""

from __future__ import annotations

import pytest
import typer

from paimon_cli.errors import guard

Py4JNetworkError = type("Py4JNetworkError", (Exception,), {"__module__": "py4j.protocol"})


def test_a_dead_spark_jvm_is_a_message_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exit_info, guard(as_json=False, debug=False):
        raise Py4JNetworkError("Error while sending or receiving\nJava stack ...")
    assert exit_info.value.exit_code == 1
    err = capsys.readouterr().err
    assert "Spark failed: Error while sending or receiving" in err
    assert "spark.driver.memory" in err and "Traceback" not in err and "Java stack" not in err


def test_an_unexpected_error_is_reported_not_raised(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exit_info, guard(as_json=True, debug=False):
        raise ZeroDivisionError("boom")
    assert exit_info.value.exit_code == 1
    err = capsys.readouterr().err
    assert '"kind": "internal_error"' in err and "Traceback" not in err


def test_spark_executor_close_survives_a_dead_session() -> None:
    from core.executors.spark import SparkExecutor

    class DeadSession:
        def stop(self) -> None:
            raise Py4JNetworkError("SparkSession does not exist in the JVM")

    executor = SparkExecutor.__new__(SparkExecutor)
    executor.spark, executor.owned, executor._tempdir = DeadSession(), True, "/nonexistent-dir"
    executor.close()  # no exception
    assert executor.owned is False
