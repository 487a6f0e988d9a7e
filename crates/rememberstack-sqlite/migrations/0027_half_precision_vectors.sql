-- Vectors are written at half precision from this version on (two bytes a
-- component in the `vector` blob; see `rows::encode_vector`), as PostgreSQL's
-- migration 0027 converts its `vectors.embedding` to `halfvec`. Blobs written
-- before stay at full precision and are read by their length, so nothing changes
-- here; the number keeps the two schema histories at the same version.
SELECT 1;
