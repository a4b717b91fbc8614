"""RAG evaluation (seed 002; contract §12)."""
