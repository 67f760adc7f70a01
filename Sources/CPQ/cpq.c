#include "cpq.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct tg_pq_api tg_pq;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[256];

/* Resolves `name` into `*slot`; on failure records why (the first failure only). */
static void resolve(void *library, const char *name, void **slot) {
    *slot = dlsym(library, name);
    if (*slot == NULL && failure[0] == '\0') {
        snprintf(failure, sizeof failure, "libpq.so.5 has no %s", name);
    }
}

static void load(void) {
    /* RTLD_LOCAL: libpq's symbols stay out of the global scope (nothing else binds to them). */
    void *library = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(failure, sizeof failure, "%s", reason ? reason : "libpq.so.5 could not be loaded");
        return;
    }
    resolve(library, "PQconnectdbParams", (void **)&tg_pq.connectdbParams);
    resolve(library, "PQstatus", (void **)&tg_pq.status);
    resolve(library, "PQerrorMessage", (void **)&tg_pq.errorMessage);
    resolve(library, "PQfinish", (void **)&tg_pq.finish);
    resolve(library, "PQsetClientEncoding", (void **)&tg_pq.setClientEncoding);
    resolve(library, "PQsetNoticeProcessor", (void **)&tg_pq.setNoticeProcessor);
    resolve(library, "PQexec", (void **)&tg_pq.exec);
    resolve(library, "PQexecParams", (void **)&tg_pq.execParams);
    resolve(library, "PQresultStatus", (void **)&tg_pq.resultStatus);
    resolve(library, "PQresultErrorMessage", (void **)&tg_pq.resultErrorMessage);
    resolve(library, "PQresultErrorField", (void **)&tg_pq.resultErrorField);
    resolve(library, "PQclear", (void **)&tg_pq.clear);
    resolve(library, "PQntuples", (void **)&tg_pq.ntuples);
    resolve(library, "PQnfields", (void **)&tg_pq.nfields);
    resolve(library, "PQgetisnull", (void **)&tg_pq.getisnull);
    resolve(library, "PQgetvalue", (void **)&tg_pq.getvalue);
    resolve(library, "PQcmdTuples", (void **)&tg_pq.cmdTuples);
    resolve(library, "PQgetlength", (void **)&tg_pq.getlength);
    /* The library stays loaded for the life of the process. */
}

int tg_pq_load(char *error, size_t size) {
    pthread_once(&once, load);
    if (failure[0] == '\0') {
        return 0;
    }
    if (error != NULL && size > 0) {
        snprintf(error, size, "%s", failure);
    }
    return -1;
}
