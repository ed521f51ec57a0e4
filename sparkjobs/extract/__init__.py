"""Extract: closed hours of the minute tables exported from the database into the Parquet lake
(:mod:`sparkjobs.extract.export`), which Spark then reads (:mod:`sparkjobs.extract.read`)."""
