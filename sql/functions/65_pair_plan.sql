-- pair plans: which bits the all-pairs reports join on
--
-- A report finds every pair within k by a self-join per "pass", each pass joining the
-- rows whose fingerprints agree on the bits of one mask. Any set of masks is exact when
-- every pattern of at most k differing bits misses at least one mask entirely; then a
-- pair within k agrees on that mask's bits and its pass sees it. Two families qualify:
--   * the index's own layout: table t's mask is the fingerprint bits that land in its
--     prefix (the pigeonhole argument of the index itself);
--   * s >= k + 1 segments that partition the 64 bits, one mask per choice of s - k of
--     them: k differing bits touch at most k segments, so s - k segments stay equal.
-- Exactness never depends on the data; speed does. Each pass costs a hash of every row
-- plus one comparison per pair of rows that agree on its mask, and on fingerprints
-- whose bits are not uniform (32-bit values in a bigint column, a corpus whose
-- documents share a template) the layout's prefixes can be nearly constant, so a pass
-- compares almost every pair of rows. simpg.pair_masks measures that on a sample of
-- the table and picks the family, and the segments' bits, with the least estimated
-- work; a single mask of no bits (compare every pair) is the floor it never exceeds.

-- layout_masks: table t's mask, for each t of layout (k, levels): the fingerprint bits
-- that simpg.permute moves into the table's prefix, the source bits of its leading
-- positions. One table_order per table (every report calls this, twice or more, and 64
-- prefix_lo calls per table are slow).
CREATE FUNCTION simpg.layout_masks(k integer, levels integer[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ARRAY(
        SELECT (SELECT pg_catalog.bit_or(1::bigint OPERATOR(pg_catalog.<<) (63 OPERATOR(pg_catalog.-) o.src))
                FROM pg_catalog.unnest((x.o).bit_order) WITH ORDINALITY AS o(src, pos)
                WHERE o.pos OPERATOR(pg_catalog.<=) (x.o).prefix_bits)
        FROM (SELECT t, simpg.table_order(k, levels, t) AS o
              FROM pg_catalog.generate_series(0, simpg.table_count(k, levels) - 1) AS t) AS x
        ORDER BY x.t
    );

COMMENT ON FUNCTION simpg.layout_masks(integer, integer[]) IS
    'Per table of layout (k, levels): the mask of the fingerprint bits that form its prefix';

-- segment_masks: s segments over the 64 bits, balanced by bit_weights (64 weights, bit
-- 0 first: the information a bit carries), one mask per choice of s - k segments.
-- Contract: k >= 0, s > k, at most 64 segments; the masks are exact for radius k
-- whatever the weights (they only decide which bit goes where).
CREATE FUNCTION simpg.segment_masks(k integer, s integer, bit_weights float8[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_segment bigint[] := array_fill(0::bigint, ARRAY[s]);
    v_weight float8[] := array_fill(0::float8, ARRAY[s]);
    v_size integer[] := array_fill(0, ARRAY[s]);
    v_masks bigint[] := '{}';
    v_bit integer;
    v_to integer;
    v_mask bigint;
    v_combo integer[];
BEGIN
    IF k < 0 OR s <= k OR s > 64 OR cardinality(bit_weights) <> 64 THEN
        RAISE EXCEPTION 'segment_masks needs 0 <= k < s <= 64 and 64 weights, got k=%, s=%, % weights',
            k, s, cardinality(bit_weights) USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- greedy balance: the heaviest bit first, each to the lightest segment (then the
    -- one with fewest bits, then the first)
    FOR v_bit IN SELECT b FROM generate_series(0, 63) AS b ORDER BY bit_weights[b + 1] DESC, b LOOP
        SELECT i INTO v_to FROM generate_series(1, s) AS i
        ORDER BY v_weight[i], v_size[i], i LIMIT 1;
        v_segment[v_to] := v_segment[v_to] | (1::bigint << v_bit);
        v_weight[v_to] := v_weight[v_to] + greatest(bit_weights[v_bit + 1], 0);
        v_size[v_to] := v_size[v_to] + 1;
    END LOOP;
    -- every choice of s - k segments, in lexicographic order
    FOR v_combo IN
        WITH RECURSIVE c(items) AS (
            SELECT ARRAY[i] FROM generate_series(1, s) AS i
            UNION ALL
            SELECT c.items || i FROM c, generate_series(1, s) AS i
            WHERE i > c.items[cardinality(c.items)] AND cardinality(c.items) < s - k
        )
        SELECT items FROM c WHERE cardinality(items) = s - k ORDER BY items
    LOOP
        v_mask := 0;
        FOR v_to IN SELECT unnest(v_combo) LOOP
            v_mask := v_mask | v_segment[v_to];
        END LOOP;
        v_masks := v_masks || v_mask;
    END LOOP;
    RETURN v_masks;
END
$$;

COMMENT ON FUNCTION simpg.segment_masks(integer, integer, float8[]) IS
    'Masks of every choice of s - k out of s segments of the 64 bits, the segments balanced by bit_weights';

-- pass_cost: estimated work of one pair report with these masks over rows rows,
-- from a sample: rows hashed per pass (c_row each) plus the pairs each pass compares,
-- the sample's pairs that agree on the mask scaled up to the table.
CREATE FUNCTION simpg.pass_cost(sample bigint[], masks bigint[], rows float8, c_row float8) RETURNS float8
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN rows * c_row * pg_catalog.cardinality(masks) + (
        SELECT pg_catalog.sum(g.c * (g.c - 1))
        FROM (SELECT pg_catalog.count(*) AS c
              FROM pg_catalog.unnest(sample) AS f, pg_catalog.unnest(masks) WITH ORDINALITY AS m(mask, t)
              GROUP BY m.t, f OPERATOR(pg_catalog.&) m.mask) AS g
    )::float8 / (pg_catalog.cardinality(sample)::float8 * (pg_catalog.cardinality(sample) - 1))
      * rows * (rows - 1) / 2;

COMMENT ON FUNCTION simpg.pass_cost(bigint[], bigint[], float8, float8) IS
    'Internal: estimated work of pair passes on masks over rows rows, from a sample of at least 2 fingerprints';

-- pair_masks: the masks a pair report within k joins on, for the table and column of
-- an index (layout: its row of simpg.indexes, one candidate plan; see the top of this
-- file). Reads a sample of at most about 3,000 fingerprints (all of them in a small
-- table; SYSTEM sampling with a fixed seed otherwise, so the same data gets the same
-- plan: it reads only the sampled pages, where BERNOULLI reads the whole table),
-- estimates each candidate plan's work as rows hashed plus
-- pairs compared, and returns the cheapest. Works on plain and partitioned tables; an empty table gets the
-- layout's masks.
CREATE FUNCTION simpg.pair_masks(layout simpg.indexes, k integer) RETURNS bigint[]
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- estimated cost of hashing one row into a pass, in units of one pair compared
    -- (measured with bench/pairs_skew.py)
    c_row CONSTANT float8 := 7.5;
    c_sample CONSTANT integer := 3000;
    v_rows float8;
    v_sample bigint[];
    v_m float8;
    v_weights float8[];
    rel regclass := layout.indexed_table;
    col name := layout.fingerprint_column;
    v_layout bigint[] := simpg.layout_masks(layout.k, layout.levels);
    v_best bigint[];
    v_best_cost float8;
    v_masks bigint[];
    v_cost float8;
    v_s integer;
BEGIN
    SELECT CASE WHEN c.relkind = 'p' THEN -1 ELSE c.reltuples END INTO v_rows
    FROM pg_class AS c WHERE c.oid = rel;
    IF v_rows IS NULL OR v_rows < 0 OR v_rows <= 2 * c_sample THEN
        EXECUTE format('SELECT count(*) FROM %s AS t WHERE t.%I IS NOT NULL', rel, col) INTO v_rows;
    END IF;
    IF v_rows <= 2 * c_sample THEN
        EXECUTE format('SELECT array_agg(t.%I) FROM %s AS t WHERE t.%I IS NOT NULL', col, rel, col)
            INTO v_sample;
    ELSE
        -- the LIMIT bounds the work when reltuples is far below the table's real size
        EXECUTE format('SELECT array_agg(s.fp) FROM (SELECT t.%I AS fp FROM %s AS t TABLESAMPLE SYSTEM (%s) REPEATABLE (0) '
                       'WHERE t.%I IS NOT NULL LIMIT %s) AS s',
                       col, rel, least(100.0, 100.0 * c_sample / v_rows), col, 4 * c_sample)
            INTO v_sample;
    END IF;
    v_m := coalesce(cardinality(v_sample), 0);
    IF v_m < 2 THEN
        RETURN v_layout;
    END IF;
    v_best := v_layout;
    v_best_cost := simpg.pass_cost(v_sample, v_layout, v_rows, c_row);
    -- the layout's passes compare no more pairs than they hash rows: keep it
    IF v_best_cost <= 2 * c_row * v_rows * cardinality(v_layout) THEN
        RETURN v_best;
    END IF;
    -- bit weights: each bit's entropy on the sample, so that constant bits (which
    -- every pair shares) do not make a segment look informative
    SELECT array_agg(CASE WHEN x.p <= 0 OR x.p >= 1 THEN 0
                          ELSE -(x.p * ln(x.p) + (1 - x.p) * ln(1 - x.p)) / ln(2) END ORDER BY x.b)
    INTO v_weights
    FROM (SELECT b, (SELECT count(*) FILTER (WHERE f & (1::bigint << b) <> 0) FROM unnest(v_sample) AS f)::float8
                    / v_m AS p
          FROM generate_series(0, 63) AS b) AS x(b, p);
    FOR v_s IN k + 1 .. least(64, k + 5) LOOP
        EXIT WHEN simpg.binomial(v_s, k) > 256;
        v_masks := simpg.segment_masks(k, v_s, v_weights);
        v_cost := simpg.pass_cost(v_sample, v_masks, v_rows, c_row);
        IF v_cost < v_best_cost THEN
            v_best := v_masks;
            v_best_cost := v_cost;
        END IF;
    END LOOP;
    -- one pass over every pair of rows: what a nested loop would do
    IF simpg.pass_cost(v_sample, ARRAY[0::bigint], v_rows, c_row) < v_best_cost THEN
        v_best := ARRAY[0::bigint];
    END IF;
    RETURN v_best;
END
$$;

COMMENT ON FUNCTION simpg.pair_masks(simpg.indexes, integer) IS
    'The masks the pair reports within k join on, for an index''s table and column: the layout''s, or segments fitted to a sample of the data';

-- Candidate rows from the index's B-trees. With the layout's masks, table
-- t's mask is exactly the prefix_bits(t) leading bits of its stored prefix column, and
-- that column's B-tree holds the table in prefix order. So the rows that share table
-- t's mask with another row (the only rows pass t can pair) sit next to each other in
-- one index-only scan of that B-tree: lag() over the scan's order finds them, with no
-- sort, no grouping and no range scan per prefix (simpg.prefix_repeats). On uniform
-- fingerprints they are about 2.5% of the rows per pass at 1M rows, 15% at 10M. The
-- pairs among them are found on the stored values alone (simpg.prefix_pairs), and
-- only the rows of those pairs are read from the table, by value, through the same
-- B-tree; callers confirm each pair on the fingerprints themselves, so a candidate
-- never makes a pair that is not one.
-- Trust: the candidates are as complete as the stored prefixes are current, exactly as
-- for simpg.near (simpg.check finds stale ones); this is only used when the caller may
-- read every prefix column, and falls back to joining the whole table otherwise.

-- prefix_candidates_usable: whether the pair reports can take candidates from the
-- B-trees of layout for these masks: the masks are the layout's own (not segments
-- fitted to skewed data) and the caller may SELECT every prefix column.
CREATE FUNCTION simpg.prefix_candidates_usable(layout simpg.indexes, masks bigint[]) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN masks OPERATOR(pg_catalog.=) simpg.layout_masks(layout.k, layout.levels)
       AND (SELECT pg_catalog.bool_and(pg_catalog.has_column_privilege(layout.indexed_table, c, 'SELECT'))
            FROM pg_catalog.unnest(layout.prefix_columns) AS c);

COMMENT ON FUNCTION simpg.prefix_candidates_usable(simpg.indexes, bigint[]) IS
    'Internal: whether pair passes on masks can read their candidate rows from the B-trees of layout';

-- prefix_repeats: the statement giving (v, l) for each row of table t's B-tree whose
-- stored value v shares table t's prefix with l, the value of the row before it in
-- the B-tree's order. Every value of a prefix that two or more rows share comes out
-- as a v or an l; v = l where two rows share the whole value (one fingerprint).
-- Contract: t in [0, table_count). ORDER BY the column alone lets the planner read it
-- with an index-only scan of the B-tree, already in order; lag() ignores the frame, and
-- a ROWS frame spares the window its peer checks (10-20% faster at 1M and 10M rows).
-- The prefixes are compared as one XOR shifted (top bits equal iff it is 0): a few
-- percent of a pass, whose cost is this filter and window on every row.
CREATE FUNCTION simpg.prefix_repeats(layout simpg.indexes, t integer) RETURNS text
    LANGUAGE sql STABLE
    RETURN pg_catalog.format(
        'SELECT x.v, x.l FROM (SELECT s.%1$I AS v, pg_catalog.lag(s.%1$I) OVER (ORDER BY s.%1$I ROWS 1 PRECEDING) AS l '
        'FROM %2$s AS s WHERE s.%1$I IS NOT NULL) AS x '
        'WHERE (x.v # x.l) >> %3$L::integer = 0',
        layout.prefix_columns[t + 1], layout.indexed_table,
        64 - simpg.prefix_bits(layout.k, layout.levels, t));

COMMENT ON FUNCTION simpg.prefix_repeats(simpg.indexes, integer) IS
    'Internal: each row of table t''s B-tree that shares its prefix with the row before it, as (v, l), from one ordered index-only scan';

-- prefix_pairs: the statement giving (va, vb), each pair of distinct values of table
-- t's prefix column that pass t of masks (the layout's) finds first: same prefix,
-- within k, and apart on every earlier mask (as simpg/allpairs.py keeps each pair
-- once); with equal_values also (v, v) once for each value that two or more rows
-- share. Of a prefix's values x1 <= ... <= xn, simpg.prefix_repeats gives (x2, x1),
-- ..., (xn, xn-1): every x below xn is an l and every x above x1 a v, so joining its
-- rows on the prefix and taking l < v yields every pair of distinct values (DISTINCT:
-- once each when values repeat). The stored values are the fingerprints under
-- simpg.permute, which only moves bits: distances stay, and mask m becomes
-- permute(m). Callers read the rows of each value (simpg.prefix_rows) and confirm the
-- pair on their fingerprints.
CREATE FUNCTION simpg.prefix_pairs(layout simpg.indexes, masks bigint[], t integer, k integer,
                                   equal_values boolean)
    RETURNS text
    LANGUAGE sql STABLE
    -- x: table t's permutation, worked out once for all the earlier masks
    RETURN (
        SELECT pg_catalog.format(
            'WITH w AS MATERIALIZED (%1$s) '
            'SELECT DISTINCT a.l AS va, b.v AS vb FROM w AS a JOIN w AS b '
            'ON b.v >> %2$L::integer = a.l >> %2$L::integer AND a.l < b.v '
            'WHERE %3$ssimpg.hamming(a.l, b.v) <= %4$L::integer%5$s',
            simpg.prefix_repeats(layout, t),
            64 - simpg.prefix_bits(layout.k, layout.levels, t),
            (SELECT pg_catalog.string_agg(
                        pg_catalog.format('(a.l # b.v) & %L::bigint <> 0 AND ',
                                          simpg.apply_segments(masks[u + 1], x.segs)), '' ORDER BY u)
             FROM pg_catalog.generate_series(0, t - 1) AS u),
            k,
            CASE WHEN equal_values THEN ' UNION ALL SELECT DISTINCT w.v, w.v FROM w WHERE w.v = w.l' ELSE '' END)
        FROM (SELECT simpg.table_segments(layout.k, layout.levels, t) AS segs) AS x
    );

COMMENT ON FUNCTION simpg.prefix_pairs(simpg.indexes, bigint[], integer, integer, boolean) IS
    'Internal: the pairs of stored values of table t within k that pass t finds first, from its B-tree alone';

-- prefix_rows: a LATERAL subquery reading the rows whose table t value is value_expr
-- (an outer column) through table t's B-tree, select_list over alias s. OFFSET 0
-- keeps it one index scan per outer row, whatever the planner thinks of their number.
CREATE FUNCTION simpg.prefix_rows(layout simpg.indexes, t integer, select_list text, value_expr text)
    RETURNS text
    LANGUAGE sql STABLE
    RETURN pg_catalog.format('SELECT %3$s FROM %2$s AS s WHERE s.%1$I = %4$s OFFSET 0',
                             layout.prefix_columns[t + 1], layout.indexed_table, select_list, value_expr);

COMMENT ON FUNCTION simpg.prefix_rows(simpg.indexes, integer, text, text) IS
    'Internal: the rows whose table t value is value_expr, by an index scan of its B-tree';
