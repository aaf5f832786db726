"""A mistyped --options key is warned about with the closest key Apache Paimon defines, and
passed on anyway (issue 25.6); the key list is generated from Paimon's CoreOptions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from core.format.options import DEFAULTS, unknown_options
from core.format.paimon_option_keys import PAIMON_OPTION_KEYS

REPO = Path(__file__).resolve().parents[2]


def test_a_typo_is_warned_about_with_the_closest_key(run, scenarios) -> None:
    root = scenarios["many_commits"].root
    args = ("expire-snapshots", root, "--dry-run", "--json")
    typo = run(*args, "--options", "snapshot.num-retained.mn=3,snapshot.time-retained=1 d")
    assert typo.exit_code == 0, typo.stderr  # never a refusal
    assert "'snapshot.num-retained.mn' is not a table option" in typo.stderr
    assert "did you mean 'snapshot.num-retained.min'?" in typo.stderr
    assert "snapshot.time-retained" not in typo.stderr  # a key Paimon defines
    # Keys built from names, format options and ours pass silently; unknown ones are said.
    fine = "fields.v.aggregate-function=sum,parquet.block.size=1,paimon-cli.runs.num-retained=5"
    quiet = run(*args, "--options", fine)
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr, quiet.stderr
    odd = run(*args, "--options", "no.such.thing=1")
    assert "'no.such.thing' is not a table option" in odd.stderr
    assert "did you mean" not in odd.stderr


def test_every_key_the_tool_reads_is_known() -> None:
    assert not unknown_options(list(DEFAULTS))
    assert {"bucket", "snapshot.num-retained.min", "deletion-vectors.enabled"} <= (
        PAIMON_OPTION_KEYS
    )
    # Fallback and deprecated keys are keys too.
    assert "snapshot.expire.clean-empty-directories" in PAIMON_OPTION_KEYS


def test_the_generator_reads_core_options_as_written() -> None:
    spec = importlib.util.spec_from_file_location(
        "paimon_option_keys", REPO / "scripts" / "paimon_option_keys.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    java = """
    public static final String FIELDS_PREFIX = "fields";
    public static final String DEFAULT_AGG_FUNCTION = "default-aggregate-function";
    public static final ConfigOption<Integer> BUCKET =
            key("bucket").intType().defaultValue(-1);
    public static final ConfigOption<Boolean> IGNORE =
            key("ignore-delete")
                    .booleanType()
                    .defaultValue(false)
                    .withFallbackKeys(
                            "first-row.ignore-delete", "partial-update.ignore-delete");
    public static final ConfigOption<String> AGG =
            key(FIELDS_PREFIX + "." + DEFAULT_AGG_FUNCTION).stringType().noDefaultValue();
    public ConfigOption<String> perField(String fieldName) {
        return key(FIELDS_PREFIX + "." + fieldName + ".x").stringType().noDefaultValue();
    }
    """
    assert script.option_keys(java) == [
        "bucket",
        "fields.default-aggregate-function",
        "first-row.ignore-delete",
        "ignore-delete",
        "partial-update.ignore-delete",
    ]
    module = script.render(["a", "b"], "abc")
    namespace: dict[str, object] = {}
    exec(compile(module, "generated", "exec"), namespace)
    assert namespace["PAIMON_OPTION_KEYS"] == frozenset({"a", "b"})
