package main

import (
	dbsql "database/sql"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"
)

// exitStaleSchema is the exit code of a database file written by an older server: the caller may move
// the file aside and start again (scripts/dev-server.ts does).
const exitStaleSchema = 3

type staleSchemaError struct {
	file    string
	missing []string
}

func (e *staleSchemaError) Error() string {
	shown := e.missing
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("%d more", len(e.missing)-5))
	}
	return fmt.Sprintf("%s was written by an older Temporal server: it lacks %s. SQLite files are not "+
		"upgraded (the server ships no migrations for them): move it aside or remove it",
		e.file, strings.Join(shown, ", "))
}

// checkSchema compares an existing file's tables and columns with the schema this server sets up on a
// new database: a file from an older release lacks some (1.29 has no current_chasm_executions table,
// and its visibility table lacks generated columns that SQLite cannot add to a table afterwards).
func checkSchema(file string) error {
	want, err := referenceSchema()
	if err != nil {
		return err
	}
	// Read-write: a file left by a killed server has a hot journal that opening rolls back.
	db, err := dbsql.Open("sqlite", "file:"+url.PathEscape(file)+"?mode=rw")
	if err != nil {
		return fmt.Errorf("opening %s: %w", file, err)
	}
	defer func() { _ = db.Close() }()
	have, err := schemaOf(db)
	if err != nil {
		return fmt.Errorf("reading the schema of %s: %w", file, err)
	}
	var missing []string
	for item := range want {
		table, _, isColumn := strings.Cut(item, ".")
		// A missing table is named once, not with each of its columns.
		if !have[item] && !(isColumn && !have[table]) {
			missing = append(missing, item)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	return &staleSchemaError{file: file, missing: missing}
}

// referenceSchema: the tables and columns of a new in-memory database (the SQLite plugin sets the
// schema up when it opens one).
func referenceSchema() (map[string]bool, error) {
	name := fmt.Sprintf("temporal-dev-server-reference-%d", os.Getpid())
	conf := &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      name,
		ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"},
	}
	admin, err := sql.NewSQLAdminDB(sqlplugin.DbKindUnknown, conf, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return nil, fmt.Errorf("setting up the reference schema: %w", err)
	}
	defer func() { _ = admin.Close() }()
	db, err := dbsql.Open("sqlite", "file:"+name+"?mode=memory&cache=shared")
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }()
	return schemaOf(db)
}

// schemaOf lists "table" and "table.column" for every table.
func schemaOf(db *dbsql.DB) (map[string]bool, error) {
	rows, err := db.Query(`SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_xinfo(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	items := map[string]bool{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return nil, err
		}
		items[table] = true
		items[table+"."+column] = true
	}
	return items, rows.Err()
}
