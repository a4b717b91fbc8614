"""The kernels: vectorised per-query metrics over the data model (no loading, evaluation or
drawing)."""
