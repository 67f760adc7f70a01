#ifndef TOUCHGATE_CPQ_H
#define TOUCHGATE_CPQ_H

/*
 * The part of libpq (PostgreSQL's client library, libpq.so.5) that fleet collection uses,
 * loaded at run time by tg_pq_load() instead of linked.
 *
 * Linking libpq made every `touchgate` command load it and the twenty libraries it needs
 * (TLS, Kerberos, LDAP, SASL) and bind their symbols before main: about 4 ms of start-up
 * on each call, for the one subcommand that ships audit records. The declarations below
 * follow libpq's documented C API and its stable ABI (libpq.so.5); the functions are
 * static inline wrappers, so none of libpq's names is defined, or exported, by our
 * binaries.
 */

#include <stddef.h>

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef unsigned int Oid;

/* PQstatus(): only CONNECTION_OK is tested for. */
typedef enum { CONNECTION_OK = 0, CONNECTION_BAD = 1 } ConnStatusType;
/* PQresultStatus(): the two results a statement succeeds with. */
typedef enum { PGRES_EMPTY_QUERY = 0, PGRES_COMMAND_OK = 1, PGRES_TUPLES_OK = 2 } ExecStatusType;
typedef void (*PQnoticeProcessor)(void *arg, const char *message);

/* The functions, once loaded. */
struct tg_pq_api {
    PGconn *(*connectdbParams)(const char *const *keywords, const char *const *values, int expand_dbname);
    ConnStatusType (*status)(const PGconn *conn);
    char *(*errorMessage)(const PGconn *conn);
    void (*finish)(PGconn *conn);
    int (*setClientEncoding)(PGconn *conn, const char *encoding);
    PQnoticeProcessor (*setNoticeProcessor)(PGconn *conn, PQnoticeProcessor processor, void *arg);
    PGresult *(*exec)(PGconn *conn, const char *command);
    PGresult *(*execParams)(PGconn *conn, const char *command, int count, const Oid *types,
                            const char *const *values, const int *lengths, const int *formats, int resultFormat);
    ExecStatusType (*resultStatus)(const PGresult *result);
    char *(*resultErrorMessage)(const PGresult *result);
    char *(*resultErrorField)(const PGresult *result, int field);
    void (*clear)(PGresult *result);
    int (*ntuples)(const PGresult *result);
    int (*nfields)(const PGresult *result);
    int (*getisnull)(const PGresult *result, int row, int column);
    char *(*getvalue)(const PGresult *result, int row, int column);
    char *(*cmdTuples)(PGresult *result);
    int (*getlength)(const PGresult *result, int row, int column);
};

extern struct tg_pq_api tg_pq;

/*
 * Loads libpq.so.5 and every function above, once per process (safe from any thread).
 * Returns 0, or -1 with the reason in `error` (NUL-terminated, at most `size` bytes);
 * a failure is remembered, and every later call returns it again.
 */
int tg_pq_load(char *error, size_t size);

/* libpq's names, for the Swift code; call them only after tg_pq_load() returned 0. */
static inline PGconn *PQconnectdbParams(const char *const *keywords, const char *const *values, int expand) {
    return tg_pq.connectdbParams(keywords, values, expand);
}
static inline ConnStatusType PQstatus(const PGconn *conn) { return tg_pq.status(conn); }
static inline char *PQerrorMessage(const PGconn *conn) { return tg_pq.errorMessage(conn); }
static inline void PQfinish(PGconn *conn) { if (conn) tg_pq.finish(conn); }
static inline int PQsetClientEncoding(PGconn *conn, const char *encoding) {
    return tg_pq.setClientEncoding(conn, encoding);
}
static inline PQnoticeProcessor PQsetNoticeProcessor(PGconn *conn, PQnoticeProcessor processor, void *arg) {
    return tg_pq.setNoticeProcessor(conn, processor, arg);
}
static inline PGresult *PQexec(PGconn *conn, const char *command) { return tg_pq.exec(conn, command); }
static inline PGresult *PQexecParams(PGconn *conn, const char *command, int count, const Oid *types,
                                     const char *const *values, const int *lengths, const int *formats,
                                     int resultFormat) {
    return tg_pq.execParams(conn, command, count, types, values, lengths, formats, resultFormat);
}
static inline ExecStatusType PQresultStatus(const PGresult *result) { return tg_pq.resultStatus(result); }
static inline char *PQresultErrorMessage(const PGresult *result) { return tg_pq.resultErrorMessage(result); }
/* PQresultErrorField(): PG_DIAG_SQLSTATE ('C') is the only field read. */
#define PG_DIAG_SQLSTATE 'C'
static inline char *PQresultErrorField(const PGresult *result, int field) {
    return tg_pq.resultErrorField(result, field);
}
static inline void PQclear(PGresult *result) { if (result) tg_pq.clear(result); }
static inline int PQntuples(const PGresult *result) { return tg_pq.ntuples(result); }
static inline int PQnfields(const PGresult *result) { return tg_pq.nfields(result); }
static inline int PQgetisnull(const PGresult *result, int row, int column) {
    return tg_pq.getisnull(result, row, column);
}
static inline char *PQgetvalue(const PGresult *result, int row, int column) {
    return tg_pq.getvalue(result, row, column);
}
static inline char *PQcmdTuples(PGresult *result) { return tg_pq.cmdTuples(result); }
static inline int PQgetlength(const PGresult *result, int row, int column) {
    return tg_pq.getlength(result, row, column);
}

#endif
