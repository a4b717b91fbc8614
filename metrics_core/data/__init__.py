"""The data model: the sorted per-query and per-candidate arrays every kernel reads."""
