"""Finding memories again: embedders (the Embedder port), the vector index, ranking, time phrases in queries."""
