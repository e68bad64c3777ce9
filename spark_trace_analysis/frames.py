"""DataFrames of a few rows made in the driver's Python (a vocabulary, a one-row summary)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["local_frame"]


def local_frame(spark, rows: Iterable[Sequence], schema):
    """A DataFrame of a few rows made in this process (a vocabulary, a one-row summary),
    handed to the JVM as one Arrow table: the plans that read it hold a local table
    (LocalTableScan).  spark.createDataFrame of Python tuples makes a Python RDD instead, and
    every query over it runs Spark tasks in Python workers to produce its rows again (on the
    demo corpus, 1.2 s for the broadcast of the action vocabulary alone).  `schema`: a DDL
    string or a StructType; a value of the wrong type is an error here, as with
    createDataFrame."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_string

    st = schema if isinstance(schema, StructType) else _parse_datatype_string(schema)
    names = st.names
    table = pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in rows],
                                 schema=to_arrow_schema(st))
    return spark.createDataFrame(table, st)
