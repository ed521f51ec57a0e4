"""The PySpark pipeline: minute data exported to a Parquet lake (``extract``), rolled up and ranked by pure
DataFrame functions (``transforms``), written back through one writer (``load``); ``jobs`` wires them per window.
See docs/spark.md."""
