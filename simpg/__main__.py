"""``python -m simpg`` runs the CLI."""

from simpg.cli import main

raise SystemExit(main())
