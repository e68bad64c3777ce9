"""kraftcheck: formal-model-first verification of Apache Kafka's KRaft protocols."""

__version__ = "0.1.0"
