#!/bin/sh
# Prepares a Temporal deployment, for docker-compose.yml and `npm run cluster` alike, in two phases:
#   setup.sh schema     creates or upgrades the two PostgreSQL databases (before the server starts)
#   setup.sh namespace  creates the namespace and registers the search attributes (once it serves)
# Both are idempotent, so both deployments run them on every start.
#
# schema reads the SQL tool's own variables SQL_PLUGIN (postgres12_pgx), SQL_HOST, SQL_PORT, SQL_USER and
#   SQL_PASSWORD, and DBNAME / VISIBILITY_DBNAME (default temporal / temporal_visibility, as in
#   config.yaml). The schemas are the ones embedded in the tool, for the tool's own server version.
# namespace reads the temporal CLI's TEMPORAL_ADDRESS, and TEMPORAL_NAMESPACE (default `default`),
#   NAMESPACE_RETENTION (default 7d) and DOCS_ADMIN_SEARCH_ATTRIBUTES (names, registered as Keyword).
# TEMPORAL_SQL_TOOL and TEMPORAL_CLI name the two programs (default: temporal-sql-tool and temporal on
# PATH, as in Temporal's admin-tools image).
set -eu

sql_tool=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}
cli=${TEMPORAL_CLI:-temporal}
namespace=${TEMPORAL_NAMESPACE:-default}

# Runs a command until it succeeds: every 2 s, for up to 2 minutes.
retry() {
  tries=0
  until "$@"; do
    tries=$((tries + 1))
    if [ "$tries" -ge 60 ]; then
      echo "setup.sh: gave up after 2 minutes: $*" >&2
      return 1
    fi
    sleep 2
  done
}

setup_schema() {
  for pair in "${DBNAME:-temporal}:temporal" "${VISIBILITY_DBNAME:-temporal_visibility}:visibility"; do
    db=${pair%%:*}
    schema=postgresql/v12/${pair#*:}
    "$sql_tool" --db "$db" create-database
    # Creates the version tables and marks 0.0 on a new database; a no-op on an existing one.
    "$sql_tool" --db "$db" setup-schema -v 0.0
    # Applies every versioned step above the database's version.
    "$sql_tool" --db "$db" update-schema --schema-name "$schema"
    echo "database $db: schema $schema up to date"
  done
}

serving() { "$cli" operator cluster health 2>/dev/null | grep -q SERVING; }
has_namespace() { "$cli" operator namespace describe -n "$namespace" >/dev/null 2>&1; }
list_search_attributes() { "$cli" operator search-attribute list -n "$namespace"; }
# Another setup may register the same name at the same moment: then it is there, which is the goal.
create_search_attribute() {
  "$cli" operator search-attribute create -n "$namespace" --name "$1" --type Keyword ||
    list_search_attributes | grep -qw "$1"
}

setup_namespace() {
  retry serving
  if has_namespace; then
    echo "namespace $namespace: exists"
  else
    "$cli" operator namespace create -n "$namespace" --retention "${NAMESPACE_RETENTION:-7d}" || has_namespace
    echo "namespace $namespace: created"
  fi
  # A new namespace takes a few seconds to reach every service's namespace cache.
  retry list_search_attributes >/dev/null
  existing=$(list_search_attributes)
  for name in ${DOCS_ADMIN_SEARCH_ATTRIBUTES:-}; do
    if printf '%s\n' "$existing" | grep -qw "$name"; then
      echo "search attribute $name: registered"
    else
      retry create_search_attribute "$name"
      echo "search attribute $name: registered now"
    fi
  done
}

case "${1:-}" in
  schema) setup_schema ;;
  namespace) setup_namespace ;;
  *)
    echo "usage: setup.sh schema|namespace" >&2
    exit 2
    ;;
esac
