"""paimon-cli engine: reads and maintains Apache Paimon tables. Never prints, never exits."""

__version__ = "0.1.0"
