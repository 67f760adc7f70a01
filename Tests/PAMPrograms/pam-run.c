/* pam-run: runs pam_authenticate for SERVICE and USER with the stacks in CONFDIR, as an
 * application would (sudo, a screen locker), for the PAM tests.
 *
 *   pam-run CONFDIR SERVICE USER [rhost=HOST] [env=NAME=VALUE] [conv=wait]...
 *
 * Messages of the conversation go to standard error, one per line: text as it is (so the
 * test's virtual finger sees "Place your finger…"), errors as "error: …", prompts as
 * "prompt: …". A prompt with echo off is answered with the first line of standard input,
 * read at the start; with conv=wait, read when the prompt comes, as a greeter waits for its
 * password field (no terminal: nothing but a line ends the wait).
 * Prints "result: PAM_…" on standard output; exits 0 once pam_authenticate ran. */
#define _GNU_SOURCE
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char password[1024];
static int wait_for_answer;

static int converse(int count, const struct pam_message **messages, struct pam_response **responses, void *data) {
    (void)data;
    struct pam_response *answers = calloc((size_t)count, sizeof *answers);
    if (!answers) return PAM_BUF_ERR;
    for (int i = 0; i < count; i++) {
        const struct pam_message *m = messages[i];
        switch (m->msg_style) {
        case PAM_TEXT_INFO: fprintf(stderr, "%s\n", m->msg); break;
        case PAM_ERROR_MSG: fprintf(stderr, "error: %s\n", m->msg); break;
        case PAM_PROMPT_ECHO_OFF:
        case PAM_PROMPT_ECHO_ON:
            fprintf(stderr, "prompt: %s\n", m->msg);
            fflush(stderr);
            if (wait_for_answer) {
                if (!fgets(password, sizeof password, stdin)) password[0] = '\0';
                password[strcspn(password, "\n")] = '\0';
                fprintf(stderr, "answered\n");
            }
            answers[i].resp = strdup(password);
            break;
        default: break;
        }
        fflush(stderr);
    }
    *responses = answers;
    return PAM_SUCCESS;
}

static const char *name(int status) {
    switch (status) {
    case PAM_SUCCESS: return "PAM_SUCCESS";
    case PAM_AUTH_ERR: return "PAM_AUTH_ERR";
    case PAM_AUTHINFO_UNAVAIL: return "PAM_AUTHINFO_UNAVAIL";
    case PAM_MAXTRIES: return "PAM_MAXTRIES";
    case PAM_USER_UNKNOWN: return "PAM_USER_UNKNOWN";
    case PAM_CRED_INSUFFICIENT: return "PAM_CRED_INSUFFICIENT";
    case PAM_IGNORE: return "PAM_IGNORE";
    case PAM_PERM_DENIED: return "PAM_PERM_DENIED";
    case PAM_SYSTEM_ERR: return "PAM_SYSTEM_ERR";
    default: return "PAM_OTHER";
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: pam-run CONFDIR SERVICE USER [rhost=HOST] [env=NAME=VALUE]...\n");
        return 2;
    }
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "conv=wait") == 0) wait_for_answer = 1;
    }
    if (!wait_for_answer && fgets(password, sizeof password, stdin)) password[strcspn(password, "\n")] = '\0';
    struct pam_conv conversation = { converse, NULL };
    pam_handle_t *pamh = NULL;
    int status = pam_start_confdir(argv[2], argv[3], &conversation, argv[1], &pamh);
    if (status != PAM_SUCCESS) {
        fprintf(stderr, "pam_start_confdir: %s\n", pam_strerror(pamh, status));
        return 1;
    }
    for (int i = 4; i < argc; i++) {
        if (strncmp(argv[i], "rhost=", 6) == 0) pam_set_item(pamh, PAM_RHOST, argv[i] + 6);
        if (strncmp(argv[i], "env=", 4) == 0) pam_putenv(pamh, argv[i] + 4);
    }
    status = pam_authenticate(pamh, 0);
    printf("result: %s\n", name(status));
    pam_end(pamh, status);
    return 0;
}
