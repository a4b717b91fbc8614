"""The one computation: the evaluator, its records, intervals, tables and checks (reads no file)."""
