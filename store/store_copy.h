/*
 * store_copy.h - copying a whole store to an empty one (store_copy.c):
 * `alertbridge store copy`, e.g. from sqlite to PostgreSQL.
 */
#ifndef AB_STORE_COPY_H
#define AB_STORE_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct store;

#define STORE_COPY_TABLES 11

/* What store_copy() copied: rows[i] rows of table tables[i] (static names). */
struct store_copy_counts {
	const char *tables[STORE_COPY_TABLES];
	int64_t rows[STORE_COPY_TABLES];
};

/*
 * Copy every row of every table of src into dst (`alertbridge store copy`):
 * the map, events of every state, notices, digests, storm summaries and
 * members, repository scans, group states, the GitHub deliveries taken
 * and the silences made (store_silences.h), and the GitHub content budget
 * spent (store_budget.h), ids kept.  dst must be empty
 * (ERR_CONFLICT naming the first table that is not, nothing written); both
 * are at store_schema_version() since store_open_target() migrated them.
 * One transaction on each side: src is read under its write lock (no writer
 * meanwhile), dst commits all or nothing (ERR_DB with errmsg; counts zero).
 * On PostgreSQL the identity sequences are moved past the copied ids.
 * ERR_INVALID when src and dst are the same store.
 */
enum err store_copy(struct store *src, struct store *dst, struct store_copy_counts *out,
		    struct buf *errmsg) WARN_UNUSED;
/*
 * The columns store_copy() copies of its i-th table ("name t name i ..."; 't'
 * text, 'i' integer), the table's name in *table; NULL past the last.  For
 * the test that holds them to the schema.
 */
const char *store_copy_columns(size_t i, const char **table);
/*
 * `alertbridge store copy --from=SOURCE --to=TARGET [--from-password-file=F]
 * [--to-password-file=F]`: argv[0] is "copy".  Prints the rows copied per
 * table; returns the exit status (0 copied, 1 failed, 2 usage).
 */
int store_copy_command(int argc, char **argv);

#endif
