"""kraftcheck: formal-model-first verification of Apache Kafka's KRaft protocols.

This package is the CLI, the top layer: it may import every other package, and none imports
it (tests/test_layering.py).  The foundation they all share is kraftcore.
"""

__version__ = "0.1.0"
