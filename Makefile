# PGXS build for the pure-SQL extension (DATA only, no C). Needs make, and pg_config
# with PGXS (Debian ships it, and pg_regress, in postgresql-client-NN).
# Without them, `simpg install-extension` copies the same files from Python.
EXTENSION = simpg
EXTVERSION = $(shell grep default_version sql/$(EXTENSION).control | sed -e "s/default_version[[:space:]]*=[[:space:]]*'\([^']*\)'/\1/")

# the install script, and the update scripts to this version: each one's hand-written
# part in sql/upgrade/ followed by the install script's objects (simpg.schema.upgrade_script
# builds the same text for the wheel and the plain install)
UPGRADES = $(patsubst sql/upgrade/%.sql,sql/$(EXTENSION)--%.sql,$(wildcard sql/upgrade/*--$(EXTVERSION).sql))
DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql $(UPGRADES)
# the install scripts (and secondary control files) and update scripts of earlier
# versions, as released
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
PARTS = $(sort $(wildcard sql/functions/*.sql))
sql/$(EXTENSION)--$(EXTVERSION).sql: $(PARTS)
	cat $^ > $@

# An update script: psql's guard, the hand-written part, then every part but the header
# with each function as CREATE OR REPLACE (an updated install equals a fresh one).
sql/$(EXTENSION)--%--$(EXTVERSION).sql: sql/upgrade/%--$(EXTVERSION).sql $(PARTS)
	{ printf '%s\n' '-- complain if script is sourced in psql, rather than via ALTER EXTENSION' \
	    '\echo Use "ALTER EXTENSION $(EXTENSION) UPDATE TO '"'"'$(EXTVERSION)'"'"'" to load this file. \quit' ''; \
	  cat $<; printf '\n'; \
	  cat $(filter-out sql/functions/00_header.sql,$(PARTS)) | sed -e 's/^CREATE FUNCTION $(EXTENSION)\./CREATE OR REPLACE FUNCTION $(EXTENSION)./'; \
	} > $@
