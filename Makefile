# PGXS build for the pure-SQL extension (DATA only, no C). Needs make, and pg_config
# with PGXS (Debian ships it, and pg_regress, in postgresql-client-NN).
# Without them, `simpg install-extension` copies the same files from Python.
EXTENSION = simpg
EXTVERSION = $(shell grep default_version sql/$(EXTENSION).control | sed -e "s/default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/")

DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
# upgrade scripts, and the install scripts (and secondary control files) of earlier
# versions as released
DATA = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*.sql)) $(wildcard sql/$(EXTENSION)--*.control)
EXTRA_CLEAN = $(DATA_built) $(EXTENSION).control test/results/ test/regression.diffs test/regression.out

# `make installcheck`: pg_regress runs test/sql/*.sql on a running server that has simpg
# installed (`make install`), compared with test/expected/*.out. Choose the server with
# libpq's variables (PGHOST, PGPORT, PGUSER); it creates and drops contrib_regression.
REGRESS = simpg
REGRESS_OPTS = --inputdir=test --outputdir=test

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The control file lives in sql/; PGXS looks for it at the top.
$(EXTENSION).control: sql/$(EXTENSION).control
	cp $< $@

all: $(EXTENSION).control

# The install script is kept in parts, joined in name order (as pg_partman does).
sql/$(EXTENSION)--$(EXTVERSION).sql: $(sort $(wildcard sql/functions/*.sql))
	cat $^ > $@
