"""CLI subcommands: each module defines ``register(subparsers)``; :mod:`simpg.cli` collects them."""
