"""paimon-cli engine: reads and maintains Apache Paimon tables. Never prints, never exits."""

__version__ = "0.1.0"

#: Marks this ``core`` as paimon-cli's engine: a generic top-level name another
#: distribution may also install (docs/DECISIONS.md D9).
PAIMON_CLI_ENGINE = True
