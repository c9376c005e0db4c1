"""Issue 14's detection-quality evaluation: a large real corpus, exact truth, pluggable detectors.

Modules:
    sources        download and cache Debian packages and index files (bench/data/quality14/cache)
    extract        roff, HTML, Mallard, Fluent, gettext (.mo) and Debian-description text extraction
    variants       the five kinds of planted edits, deterministic from a seed
    build_corpus   the one build command: sources -> base documents -> variants -> parts -> truth
                   (tune/heldout from sources.json; fresh, built alone, from sources_fresh.json)
    truth          shingle sets and exact all-pairs Jaccard (every pair with J >= 0.5 listed)
    detectors      the detector interface and the simpg / simhash / MinHash LSH detectors
    metrics        pair and cluster metrics against the truth
    evaluate       the one evaluation command (Markdown report + JSON)

See bench/quality/README.md.
"""
