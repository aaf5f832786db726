"""paimon-cli: the command-line shell around `core`."""

from core import __version__

__all__ = ["__version__"]
