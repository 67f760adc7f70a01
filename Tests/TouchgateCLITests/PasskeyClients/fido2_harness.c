/*
 * fido2_harness: drives the Touchgate passkey authenticator with libfido2.
 *
 * The authenticator speaks CTAPHID over a Unix socket of type SOCK_SEQPACKET
 * instead of /dev/uhid: each message in either direction is exactly one
 * 64-byte CTAPHID report without a report-id byte, and one connection is one
 * opened device.  libfido2 is given that socket through
 * fido_dev_set_io_functions(); the "device path" handed to fido_dev_open() is
 * the socket path.  Everything above the reports (CTAPHID framing, CBOR,
 * PIN/UV auth protocol, verification) is libfido2's own code.
 *
 * Usage:
 *   fido2_harness SOCKET info
 *   fido2_harness SOCKET make RP USER [resident] [uv] [eddsa]
 *   fido2_harness SOCKET assert RP CREDID_HEX|- PUBKEY_HEX|- [uv] [up=false]
 *
 * Output: "key value" lines on stdout.
 *   info:   ctaphid-version, device-version, ctaphid-flags, version V,
 *           extension E, aaguid HEX, option NAME true|false, maxmsgsiz N,
 *           pin-protocol N, maxcredcntlst N, maxcredidlen N, transport T,
 *           algorithm TYPE COSE, fwversion N, uv-modality N, rk-remaining N,
 *           has-uv 0|1, supports-permissions 0|1, has-pin 0|1
 *   make:   fmt F, attestation none|self|basic, attestation-verified 0|1,
 *           credential-id HEX, public-key HEX (libfido2's raw key: x||y for
 *           ES256, 32 bytes for EdDSA), type COSE, flags 0xNN, sign-count N,
 *           aaguid HEX, user-id HEX (the user id is the bytes of USER)
 *   assert: count N, then per assertion: credential-id HEX, user-id HEX,
 *           flags 0xNN, sign-count N, verified 1 (when a key was given)
 *
 * Exit status: 0 success; 2 usage, socket or harness failure (message on
 * stderr); 3 libfido2 error, with one line "error <fido_strerr> <code>" on
 * stdout (the code is libfido2's: a CTAP status such as 0x3f = 63 for
 * UV_INVALID, or a negative FIDO_ERR_* of libfido2's own such as -7 for
 * FIDO_ERR_INVALID_SIG).
 *
 * Environment: FIDO2_HARNESS_TIMEOUT_MS (default 60000; -1 waits forever)
 * bounds every libfido2 operation; FIDO2_HARNESS_TRACE=1 prints every report
 * on stderr; FIDO_DEBUG=1 turns on libfido2's own debug log.
 *
 * Build:
 *   cc -Wall -Wextra -Werror -o fido2_harness fido2_harness.c \
 *      $(pkg-config --cflags --libs libfido2)
 */

#include <sys/types.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fido.h>
#include <fido/eddsa.h>
#include <fido/es256.h>
#include <openssl/sha.h>

#define REPORT_LEN 64

#define EXIT_OK 0
#define EXIT_FAILURE_ 2
#define EXIT_FIDO_ERROR 3

static bool trace;
static int open_errno; /* errno of a failed connect, for a clear message */

struct sock_handle {
	int fd;
};

static void
trace_report(const char *dir, const unsigned char *p, size_t n)
{
	if (!trace)
		return;
	fprintf(stderr, "fido2_harness: %s ", dir);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%02x", p[i]);
	fprintf(stderr, "\n");
}

static void *
sock_open(const char *path)
{
	struct sockaddr_un sa;
	struct sock_handle *h;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		open_errno = ENAMETOOLONG;
		return NULL;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL) {
		open_errno = errno;
		return NULL;
	}
	if ((h->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0) {
		open_errno = errno;
		free(h);
		return NULL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(h->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		open_errno = errno;
		close(h->fd);
		free(h);
		return NULL;
	}
	return h;
}

static void
sock_close(void *handle)
{
	struct sock_handle *h = handle;

	close(h->fd);
	free(h);
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * libfido2 (io_own) asks for rx_len = 64 bytes and expects exactly that many;
 * ms is the time left for the whole operation, -1 for no limit.
 */
static int
sock_read(void *handle, unsigned char *buf, size_t len, int ms)
{
	struct sock_handle *h = handle;
	unsigned char report[REPORT_LEN * 2];
	struct pollfd pfd;
	long long deadline = ms < 0 ? -1 : now_ms() + ms;
	ssize_t n;
	int r;

	if (len < REPORT_LEN)
		return -1;
	for (;;) {
		int wait = -1;

		if (deadline >= 0) {
			long long left = deadline - now_ms();
			wait = left < 0 ? 0 : (int)left;
		}
		pfd.fd = h->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		r = poll(&pfd, 1, wait);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "fido2_harness: poll: %s\n", strerror(errno));
			return -1;
		}
		if (r == 0) {
			fprintf(stderr, "fido2_harness: no report within %d ms\n", ms);
			return -1;
		}
		break;
	}
	if ((n = recv(h->fd, report, sizeof(report), 0)) < 0) {
		fprintf(stderr, "fido2_harness: recv: %s\n", strerror(errno));
		return -1;
	}
	if (n == 0) {
		fprintf(stderr, "fido2_harness: the authenticator closed the connection\n");
		return -1;
	}
	if (n != REPORT_LEN) {
		fprintf(stderr, "fido2_harness: the authenticator sent a %zd-byte "
		    "message, not a %d-byte report\n", n, REPORT_LEN);
		return -1;
	}
	trace_report("<", report, REPORT_LEN);
	memcpy(buf, report, REPORT_LEN);
	return REPORT_LEN;
}

/*
 * libfido2's io.c writes tx_len + 1 = 65 bytes: buf[0] is the HID report id
 * (0), then the 64-byte report.  The socket carries the report alone; the hook
 * must still return 65, the length libfido2 asked to write.
 */
static int
sock_write(void *handle, const unsigned char *buf, size_t len)
{
	struct sock_handle *h = handle;
	ssize_t n;

	if (len != REPORT_LEN + 1 || buf[0] != 0) {
		fprintf(stderr, "fido2_harness: unexpected write of %zu bytes "
		    "(report id %u)\n", len, len ? buf[0] : 0);
		return -1;
	}
	trace_report(">", buf + 1, REPORT_LEN);
	do {
		n = send(h->fd, buf + 1, REPORT_LEN, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n != REPORT_LEN) {
		fprintf(stderr, "fido2_harness: send: %s\n",
		    n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	return (int)len;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: fido2_harness SOCKET info\n"
	    "       fido2_harness SOCKET make RP USER [resident] [uv] [eddsa]\n"
	    "       fido2_harness SOCKET assert RP CREDID_HEX|- PUBKEY_HEX|- "
	    "[uv] [up=false]\n");
	exit(EXIT_FAILURE_);
}

static int
fido_fail(const char *what, int r)
{
	fprintf(stderr, "fido2_harness: %s: %s (%d)\n", what, fido_strerr(r), r);
	printf("error %s %d\n", fido_strerr(r), r);
	fflush(stdout);
	return EXIT_FIDO_ERROR;
}

static void
print_hex(const char *key, const unsigned char *p, size_t n)
{
	printf("%s ", key);
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
	printf("\n");
}

static int
hex_decode(const char *s, unsigned char **out, size_t *out_len)
{
	size_t n = strlen(s);
	unsigned char *p;

	if (n == 0 || n % 2 != 0)
		return -1;
	if ((p = malloc(n / 2)) == NULL)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int byte;

		if (sscanf(s + 2 * i, "%2x", &byte) != 1) {
			free(p);
			return -1;
		}
		p[i] = (unsigned char)byte;
	}
	*out = p;
	*out_len = n / 2;
	return 0;
}

static void
random_bytes(unsigned char *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "fido2_harness: getrandom: %s\n",
			    strerror(errno));
			exit(EXIT_FAILURE_);
		}
		got += (size_t)r;
	}
}

static int
cmd_info(fido_dev_t *dev)
{
	fido_cbor_info_t *ci;
	char **names;
	const bool *values;
	const uint8_t *protocols;
	int r;

	printf("ctaphid-version %u\n", fido_dev_protocol(dev));
	printf("device-version %u.%u.%u\n", fido_dev_major(dev),
	    fido_dev_minor(dev), fido_dev_build(dev));
	printf("ctaphid-flags 0x%02x\n", fido_dev_flags(dev));
	if (!fido_dev_is_fido2(dev)) {
		fprintf(stderr, "fido2_harness: device is not FIDO2\n");
		return EXIT_FAILURE_;
	}
	if ((ci = fido_cbor_info_new()) == NULL)
		return EXIT_FAILURE_;
	if ((r = fido_dev_get_cbor_info(dev, ci)) != FIDO_OK) {
		fido_cbor_info_free(&ci);
		return fido_fail("fido_dev_get_cbor_info", r);
	}
	names = fido_cbor_info_versions_ptr(ci);
	for (size_t i = 0; i < fido_cbor_info_versions_len(ci); i++)
		printf("version %s\n", names[i]);
	names = fido_cbor_info_extensions_ptr(ci);
	for (size_t i = 0; i < fido_cbor_info_extensions_len(ci); i++)
		printf("extension %s\n", names[i]);
	print_hex("aaguid", fido_cbor_info_aaguid_ptr(ci),
	    fido_cbor_info_aaguid_len(ci));
	names = fido_cbor_info_options_name_ptr(ci);
	values = fido_cbor_info_options_value_ptr(ci);
	for (size_t i = 0; i < fido_cbor_info_options_len(ci); i++)
		printf("option %s %s\n", names[i], values[i] ? "true" : "false");
	printf("maxmsgsiz %llu\n",
	    (unsigned long long)fido_cbor_info_maxmsgsiz(ci));
	protocols = fido_cbor_info_protocols_ptr(ci);
	for (size_t i = 0; i < fido_cbor_info_protocols_len(ci); i++)
		printf("pin-protocol %u\n", protocols[i]);
	printf("maxcredcntlst %llu\n",
	    (unsigned long long)fido_cbor_info_maxcredcntlst(ci));
	printf("maxcredidlen %llu\n",
	    (unsigned long long)fido_cbor_info_maxcredidlen(ci));
	names = fido_cbor_info_transports_ptr(ci);
	for (size_t i = 0; i < fido_cbor_info_transports_len(ci); i++)
		printf("transport %s\n", names[i]);
	for (size_t i = 0; i < fido_cbor_info_algorithm_count(ci); i++) {
		const char *type = fido_cbor_info_algorithm_type(ci, i);

		printf("algorithm %s %d\n", type ? type : "(none)",
		    fido_cbor_info_algorithm_cose(ci, i));
	}
	printf("fwversion %llu\n",
	    (unsigned long long)fido_cbor_info_fwversion(ci));
	printf("uv-modality %llu\n",
	    (unsigned long long)fido_cbor_info_uv_modality(ci));
	printf("rk-remaining %lld\n",
	    (long long)fido_cbor_info_rk_remaining(ci));
	printf("has-uv %d\n", fido_dev_has_uv(dev) ? 1 : 0);
	printf("supports-permissions %d\n",
	    fido_dev_supports_permissions(dev) ? 1 : 0);
	printf("has-pin %d\n", fido_dev_has_pin(dev) ? 1 : 0);
	fido_cbor_info_free(&ci);
	return EXIT_OK;
}

static int
cmd_make(fido_dev_t *dev, int argc, char **argv)
{
	const char *rp = argv[0];
	const char *user = argv[1];
	bool resident = false, uv = false, eddsa = false;
	unsigned char cdh[32];
	const char *fmt;
	fido_cred_t *cred;
	size_t user_len;
	int r, rc = EXIT_OK;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "resident") == 0)
			resident = true;
		else if (strcmp(argv[i], "uv") == 0)
			uv = true;
		else if (strcmp(argv[i], "eddsa") == 0)
			eddsa = true;
		else
			usage();
	}
	user_len = strlen(user);
	if (user_len == 0 || user_len > 64) {
		fprintf(stderr, "fido2_harness: USER must be 1 to 64 bytes\n");
		return EXIT_FAILURE_;
	}
	random_bytes(cdh, sizeof(cdh));
	if ((cred = fido_cred_new()) == NULL)
		return EXIT_FAILURE_;
	if ((r = fido_cred_set_type(cred, eddsa ? COSE_EDDSA : COSE_ES256)) !=
	    FIDO_OK ||
	    (r = fido_cred_set_clientdata_hash(cred, cdh, sizeof(cdh))) !=
	    FIDO_OK ||
	    (r = fido_cred_set_rp(cred, rp, rp)) != FIDO_OK ||
	    (r = fido_cred_set_user(cred, (const unsigned char *)user, user_len,
	    user, user, NULL)) != FIDO_OK ||
	    (resident && (r = fido_cred_set_rk(cred, FIDO_OPT_TRUE)) !=
	    FIDO_OK) ||
	    (uv && (r = fido_cred_set_uv(cred, FIDO_OPT_TRUE)) != FIDO_OK)) {
		rc = fido_fail("fido_cred_set", r);
		goto out;
	}
	if ((r = fido_dev_make_cred(dev, cred, NULL)) != FIDO_OK) {
		rc = fido_fail("fido_dev_make_cred", r);
		goto out;
	}
	fmt = fido_cred_fmt(cred);
	printf("fmt %s\n", fmt ? fmt : "(none)");
	if (fmt != NULL && strcmp(fmt, "none") == 0) {
		/*
		 * Nothing to verify a signature with; libfido2 has still
		 * parsed authData.  Check the rpIdHash ourselves.
		 */
		unsigned char want[SHA256_DIGEST_LENGTH];
		const unsigned char *ad = fido_cred_authdata_raw_ptr(cred);

		SHA256((const unsigned char *)rp, strlen(rp), want);
		printf("attestation none\n");
		if (ad == NULL || fido_cred_authdata_raw_len(cred) < 37 ||
		    memcmp(ad, want, sizeof(want)) != 0) {
			rc = fido_fail("rpIdHash", FIDO_ERR_INVALID_PARAM);
			goto out;
		}
		printf("attestation-verified 0\n");
	} else if (fido_cred_x5c_ptr(cred) != NULL) {
		printf("attestation basic\n");
		if ((r = fido_cred_verify(cred)) != FIDO_OK) {
			rc = fido_fail("fido_cred_verify", r);
			goto out;
		}
		printf("attestation-verified 1\n");
	} else {
		printf("attestation self\n");
		if ((r = fido_cred_verify_self(cred)) != FIDO_OK) {
			rc = fido_fail("fido_cred_verify_self", r);
			goto out;
		}
		printf("attestation-verified 1\n");
	}
	print_hex("credential-id", fido_cred_id_ptr(cred), fido_cred_id_len(cred));
	print_hex("public-key", fido_cred_pubkey_ptr(cred),
	    fido_cred_pubkey_len(cred));
	printf("type %d\n", fido_cred_type(cred));
	printf("flags 0x%02x\n", fido_cred_flags(cred));
	printf("sign-count %u\n", fido_cred_sigcount(cred));
	print_hex("aaguid", fido_cred_aaguid_ptr(cred),
	    fido_cred_aaguid_len(cred));
	print_hex("user-id", (const unsigned char *)user, user_len);
out:
	fido_cred_free(&cred);
	return rc;
}

static int
verify_one(const fido_assert_t *assert, size_t idx, const unsigned char *pk,
    size_t pk_len)
{
	int r;

	if (pk_len == 32) {
		eddsa_pk_t *k;

		if ((k = eddsa_pk_new()) == NULL)
			return FIDO_ERR_INTERNAL;
		if ((r = eddsa_pk_from_ptr(k, pk, pk_len)) == FIDO_OK)
			r = fido_assert_verify(assert, idx, COSE_EDDSA, k);
		eddsa_pk_free(&k);
	} else {
		es256_pk_t *k;

		if ((k = es256_pk_new()) == NULL)
			return FIDO_ERR_INTERNAL;
		if ((r = es256_pk_from_ptr(k, pk, pk_len)) == FIDO_OK)
			r = fido_assert_verify(assert, idx, COSE_ES256, k);
		es256_pk_free(&k);
	}
	return r;
}

static int
cmd_assert(fido_dev_t *dev, int argc, char **argv)
{
	const char *rp = argv[0];
	const char *cred_hex = argv[1];
	const char *pk_hex = argv[2];
	unsigned char *cred_id = NULL, *pk = NULL;
	size_t cred_id_len = 0, pk_len = 0;
	bool uv = false, no_up = false;
	unsigned char cdh[32];
	fido_assert_t *assert = NULL;
	int r, rc = EXIT_OK;

	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "uv") == 0)
			uv = true;
		else if (strcmp(argv[i], "up=false") == 0)
			no_up = true;
		else
			usage();
	}
	if (strcmp(cred_hex, "-") != 0 &&
	    hex_decode(cred_hex, &cred_id, &cred_id_len) < 0) {
		fprintf(stderr, "fido2_harness: bad CREDID_HEX\n");
		return EXIT_FAILURE_;
	}
	if (strcmp(pk_hex, "-") != 0 && hex_decode(pk_hex, &pk, &pk_len) < 0) {
		fprintf(stderr, "fido2_harness: bad PUBKEY_HEX\n");
		rc = EXIT_FAILURE_;
		goto out;
	}
	random_bytes(cdh, sizeof(cdh));
	if ((assert = fido_assert_new()) == NULL) {
		rc = EXIT_FAILURE_;
		goto out;
	}
	if ((r = fido_assert_set_rp(assert, rp)) != FIDO_OK ||
	    (r = fido_assert_set_clientdata_hash(assert, cdh, sizeof(cdh))) !=
	    FIDO_OK ||
	    (cred_id != NULL && (r = fido_assert_allow_cred(assert, cred_id,
	    cred_id_len)) != FIDO_OK) ||
	    (uv && (r = fido_assert_set_uv(assert, FIDO_OPT_TRUE)) !=
	    FIDO_OK) ||
	    (no_up && (r = fido_assert_set_up(assert, FIDO_OPT_FALSE)) !=
	    FIDO_OK)) {
		rc = fido_fail("fido_assert_set", r);
		goto out;
	}
	if ((r = fido_dev_get_assert(dev, assert, NULL)) != FIDO_OK) {
		rc = fido_fail("fido_dev_get_assert", r);
		goto out;
	}
	printf("count %zu\n", fido_assert_count(assert));
	for (size_t i = 0; i < fido_assert_count(assert); i++) {
		print_hex("credential-id", fido_assert_id_ptr(assert, i),
		    fido_assert_id_len(assert, i));
		if (fido_assert_user_id_len(assert, i) > 0)
			print_hex("user-id", fido_assert_user_id_ptr(assert, i),
			    fido_assert_user_id_len(assert, i));
		printf("flags 0x%02x\n", fido_assert_flags(assert, i));
		printf("sign-count %u\n", fido_assert_sigcount(assert, i));
		if (pk != NULL) {
			if ((r = verify_one(assert, i, pk, pk_len)) != FIDO_OK) {
				rc = fido_fail("fido_assert_verify", r);
				goto out;
			}
			printf("verified 1\n");
		}
	}
out:
	fido_assert_free(&assert);
	free(cred_id);
	free(pk);
	return rc;
}

int
main(int argc, char **argv)
{
	const fido_dev_io_t io = {
		.open = sock_open,
		.close = sock_close,
		.read = sock_read,
		.write = sock_write,
	};
	const char *env;
	fido_dev_t *dev;
	int timeout_ms = 60000;
	int r, rc;

	if (argc < 3)
		usage();
	if (strcmp(argv[2], "info") == 0) {
		if (argc != 3)
			usage();
	} else if (strcmp(argv[2], "make") == 0) {
		if (argc < 5)
			usage();
	} else if (strcmp(argv[2], "assert") == 0) {
		if (argc < 6)
			usage();
	} else {
		usage();
	}
	trace = (env = getenv("FIDO2_HARNESS_TRACE")) != NULL &&
	    strcmp(env, "") != 0 && strcmp(env, "0") != 0;
	if ((env = getenv("FIDO2_HARNESS_TIMEOUT_MS")) != NULL)
		timeout_ms = atoi(env);

	/* Fail instead of silently retrying as a U2F device. */
	fido_init(FIDO_DISABLE_U2F_FALLBACK);

	if ((dev = fido_dev_new()) == NULL)
		return EXIT_FAILURE_;
	if ((r = fido_dev_set_io_functions(dev, &io)) != FIDO_OK) {
		fido_dev_free(&dev);
		return fido_fail("fido_dev_set_io_functions", r);
	}
	if ((r = fido_dev_set_timeout(dev, timeout_ms)) != FIDO_OK) {
		fido_dev_free(&dev);
		return fido_fail("fido_dev_set_timeout", r);
	}
	if ((r = fido_dev_open(dev, argv[1])) != FIDO_OK) {
		if (open_errno != 0) {
			fprintf(stderr, "fido2_harness: cannot connect to %s: "
			    "%s\n", argv[1], strerror(open_errno));
			fido_dev_free(&dev);
			return EXIT_FAILURE_;
		}
		fido_dev_free(&dev);
		return fido_fail("fido_dev_open", r);
	}

	if (strcmp(argv[2], "info") == 0)
		rc = cmd_info(dev);
	else if (strcmp(argv[2], "make") == 0)
		rc = cmd_make(dev, argc - 3, argv + 3);
	else
		rc = cmd_assert(dev, argc - 3, argv + 3);

	fido_dev_close(dev);
	fido_dev_free(&dev);
	return rc;
}
