/*
 * client: the smallest touchgated client, to show what a client without Swift or
 * Foundation costs (docs/PROTOCOL.md). Not a product: no terminal, no prompts, no
 * answers to questions, so only requests that ask nothing work.
 *
 *   client SOCKET secret ITEM      secret.get ITEM; writes the value to standard output
 *   client SOCKET status COUNT     COUNT status requests, one after the other, on one connection
 *   client SOCKET verify           verify (the first reader, any enrolled finger of the caller)
 *
 * Exit status: 0 on a result, 1 on a failure message, 2 on a broken exchange.
 *
 * Build: gcc -O2 -Wall -Wextra -Werror -o client client.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define LINE_MAX_BYTES 65536

static char buffer[2 * LINE_MAX_BYTES];
static size_t filled;

static _Noreturn void
broken (const char *what)
{
  fprintf (stderr, "client: %s\n", what);
  exit (2);
}

/* Reads one line (without its newline) into `line`; returns its length. */
static size_t
read_line (int fd, char *line)
{
  for (;;)
    {
      char *newline = memchr (buffer, '\n', filled);
      if (newline != NULL)
        {
          size_t length = (size_t) (newline - buffer);
          memcpy (line, buffer, length);
          line[length] = '\0';
          filled -= length + 1;
          memmove (buffer, newline + 1, filled);
          return length;
        }
      if (filled == sizeof buffer)
        broken ("line too long");
      ssize_t got = read (fd, buffer + filled, sizeof buffer - filled);
      if (got <= 0)
        broken ("the daemon closed the connection");
      filled += (size_t) got;
    }
}

/* Reads exactly `count` raw bytes that follow a line. */
static void
read_bytes (int fd, char *out, size_t count)
{
  size_t have = filled < count ? filled : count;
  memcpy (out, buffer, have);
  filled -= have;
  memmove (buffer, buffer + have, filled);
  while (have < count)
    {
      ssize_t got = read (fd, out + have, count - have);
      if (got <= 0)
        broken ("the daemon closed the connection inside a secret");
      have += (size_t) got;
    }
}

static void
send_line (int fd, const char *line)
{
  size_t length = strlen (line), sent = 0;
  while (sent < length)
    {
      ssize_t put = write (fd, line + sent, length - sent);
      if (put <= 0)
        broken ("cannot write to the daemon");
      sent += (size_t) put;
    }
}

/* Waits for the end of request `id`: 0 on a result (its secret, if any, in `secret`), 1 on a failure. */
static int
await_end (int fd, char *line, char *secret, size_t *secret_length)
{
  for (;;)
    {
      read_line (fd, line);
      if (strstr (line, "\"kind\":\"failure\"") != NULL)
        {
          fprintf (stderr, "client: %s\n", line);
          return 1;
        }
      if (strstr (line, "\"kind\":\"result\"") == NULL)
        continue; /* an event */
      const char *length = strstr (line, "\"secret-length\":");
      *secret_length = 0;
      if (length != NULL)
        {
          *secret_length = strtoul (length + strlen ("\"secret-length\":"), NULL, 10);
          if (*secret_length > LINE_MAX_BYTES)
            broken ("secret too long");
          read_bytes (fd, secret, *secret_length);
        }
      return 0;
    }
}

int
main (int argc, char **argv)
{
  int verify = argc == 3 && strcmp (argv[2], "verify") == 0;
  if (!verify && (argc != 4 || (strcmp (argv[2], "secret") != 0 && strcmp (argv[2], "status") != 0)))
    {
      fprintf (stderr, "usage: client SOCKET secret ITEM | client SOCKET status COUNT | client SOCKET verify\n");
      return 64;
    }
  struct sockaddr_un address = { .sun_family = AF_UNIX };
  if (strlen (argv[1]) >= sizeof address.sun_path)
    broken ("socket path too long");
  strcpy (address.sun_path, argv[1]);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect (fd, (struct sockaddr *) &address, sizeof address) != 0)
    broken ("cannot connect to the daemon");

  static char line[LINE_MAX_BYTES + 1], secret[LINE_MAX_BYTES], request[1024];
  read_line (fd, line);
  if (strstr (line, "\"kind\":\"hello\"") == NULL)
    broken ("no hello");
  size_t secret_length = 0;
  if (verify)
    {
      send_line (fd, "{\"version\":1,\"kind\":\"request\",\"id\":1,\"operation\":\"verify\",\"arguments\":{}}\n");
      int status = await_end (fd, line, secret, &secret_length);
      if (status == 0 && strstr (line, "\"match\":true") == NULL)
        status = 1;
      return status;
    }
  if (strcmp (argv[2], "secret") == 0)
    {
      /* The item name goes into JSON as it is: the bench names it, plainly. */
      if (strpbrk (argv[3], "\"\\") != NULL || strlen (argv[3]) > 256)
        broken ("item name must be plain");
      snprintf (request, sizeof request,
                "{\"version\":1,\"kind\":\"request\",\"id\":1,\"operation\":\"secret.get\","
                "\"arguments\":{\"item\":\"%s\"}}\n",
                argv[3]);
      send_line (fd, request);
      int status = await_end (fd, line, secret, &secret_length);
      if (status == 0)
        fwrite (secret, 1, secret_length, stdout);
      explicit_bzero (secret, sizeof secret);
      return status;
    }
  long count = strtol (argv[3], NULL, 10);
  for (long id = 1; id <= count; id++)
    {
      snprintf (request, sizeof request,
                "{\"version\":1,\"kind\":\"request\",\"id\":%ld,\"operation\":\"status\"}\n", id);
      send_line (fd, request);
      if (await_end (fd, line, secret, &secret_length) != 0)
        return 1;
    }
  return 0;
}
