-- Vectors are kept at half precision (`halfvec`: two bytes a component, 11
-- significant bits), as the embedded store keeps them from its migration 0027 on:
-- half the table's vector bytes, and the same cosine on both stores. Writers scale
-- a vector whose largest component half precision would not hold (above 65,504,
-- or below 0.01) to unit length first, which no cosine sees; stored vectors are
-- converted by the same rule, on their norm. The per-generation HNSW indexes are
-- expressions over `embedding::vector(DIM)`: the conversion rebuilds them as they
-- are, and queries keep their shape (a query vector at full precision against
-- each stored vector widened back to `vector`).
ALTER TABLE vectors ALTER COLUMN embedding TYPE halfvec USING (
    CASE WHEN vector_norm(embedding) BETWEEN 0.01 AND 65504 THEN embedding
         ELSE l2_normalize(embedding)
    END)::halfvec;
