-- planner functions

-- The sizing rule when blocks are not given; mirrors simpg.layout.default_blocks.
CREATE FUNCTION simpg.default_blocks(k integer, row_count bigint) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_want integer := greatest(ceil(log(2, greatest(row_count, 2)::numeric))::integer - 4, 1);
    v_m integer := k + 1;
    v_narrowest integer;
BEGIN
    PERFORM simpg.table_count(k, ARRAY[k + 1]);  -- validates k
    LOOP
        SELECT sum(w) INTO v_narrowest FROM (
            SELECT w FROM unnest(simpg.block_widths(64, v_m)) AS w ORDER BY w LIMIT v_m - k
        ) AS narrowest;
        IF v_narrowest >= v_want OR v_m + 1 > 64 OR simpg.binomial(v_m + 1, v_m + 1 - k) > 64 THEN
            RETURN v_m;
        END IF;
        v_m := v_m + 1;
    END LOOP;
END
$$;

COMMENT ON FUNCTION simpg.default_blocks(integer, bigint) IS
    'Fewest blocks whose narrowest prefix has at least log2(rows) - 4 bits, at most 64 tables';

-- default_levels: the layout create_index uses when blocks are not given.
CREATE FUNCTION simpg.default_levels(k integer, row_count bigint) RETURNS integer[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ARRAY[simpg.default_blocks(k, row_count)];

COMMENT ON FUNCTION simpg.default_levels(integer, bigint) IS
    'Layout (blocks per level) that create_index picks for k and a table of row_count rows';
