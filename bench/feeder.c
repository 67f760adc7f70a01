/*
 * feeder: runs a command against one of libfprint's virtual readers and plays the finger,
 * with as little cost of its own as possible so that benchmark timings are the command's.
 *
 *   feeder image PGM[,PGM...] -- COMMAND [ARGS...]
 *       virtual_image: each time the command prints a prompt line on standard error
 *       ("Place your…", "Swipe your…" or a JSON finger-needed event), the next image is
 *       sent (the last one repeats). An image must only be sent once the reader waits for
 *       a finger, which is exactly when the prompt appears.
 *   feeder device ID[,ID...] -- COMMAND [ARGS...]
 *       virtual_device: as soon as the driver listens, sends `SCAN ID` for each ID, one
 *       command per connection, ahead of the operation (the driver queues them).
 *   feeder device-on-prompt ID[,ID...] -- COMMAND [ARGS...]
 *       virtual_device, but each `SCAN ID` is sent when the command prints a prompt line,
 *       as for virtual_image (the last ID repeats). For a reader other clients share
 *       (touchgated's, with FEEDER_SOCKET): a command queued ahead would go to whichever
 *       operation waits first, another user's included.
 *
 * The socket lives in a fresh private directory under $TMPDIR (or /tmp), removed at the
 * end; FP_VIRTUAL_IMAGE or FP_VIRTUAL_DEVICE and FP_DRIVERS_WHITELIST are set for the
 * command. With FEEDER_SOCKET set, the socket is that one instead: a reader another
 * process holds open (touchgated), whose finger the feeder plays for the command. Standard input and output are the command's; its standard error is passed
 * through. The exit status is the command's (128 + signal when it was killed).
 *
 * Build: gcc -O2 -Wall -Wextra -o feeder feeder.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#define MAX_ITEMS 16

struct image {
  int32_t width, height;
  unsigned char *pixels;
};

static pid_t child = -1;
static char directory[4096], socket_path[4096 + 16];

/* Stops the command too, so that it does not wait for a finger forever. */
static _Noreturn void
stop (void)
{
  if (child > 0)
    kill (child, SIGTERM);
  if (directory[0] != '\0')
    {
      unlink (socket_path);
      rmdir (directory);
    }
  exit (2);
}

/* A SIGTERM or SIGINT to the feeder goes to the command, whose end the feeder then waits
   for: a bench that stops the feeder stops the agent it started. */
static void
forward (int signal_number)
{
  if (child > 0)
    kill (child, signal_number);
}

static _Noreturn void
die (const char *what)
{
  fprintf (stderr, "feeder: %s: %s\n", what, strerror (errno));
  stop ();
}

/* Writes all of DATA; false when the reader closed this connection (it closes it when the
 * command closes the reader, which a long-running command such as touchgate agent does
 * between touches), so the caller can connect anew. */
static bool
write_or_closed (int fd, const void *data, size_t length)
{
  const char *bytes = data;
  while (length > 0)
    {
      ssize_t written = write (fd, bytes, length);
      if (written < 0)
        {
          if (errno == EINTR)
            continue;
          if (errno == EPIPE || errno == ECONNRESET)
            return false;
          die ("write to the reader");
        }
      bytes += written;
      length -= (size_t) written;
    }
  return true;
}

static void
write_all (int fd, const void *data, size_t length)
{
  if (!write_or_closed (fd, data, length))
    die ("write to the reader");
}

/* Reads one whitespace-separated PGM header token; skips comments. */
static int
pgm_token (FILE *file)
{
  int c, value = 0, digits = 0;
  while ((c = fgetc (file)) != EOF)
    {
      if (c == '#')
        while ((c = fgetc (file)) != EOF && c != '\n')
          ;
      else if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
        break;
    }
  while (c >= '0' && c <= '9')
    {
      value = value * 10 + (c - '0');
      digits++;
      c = fgetc (file);
    }
  return digits > 0 ? value : -1;
}

static struct image
load_pgm (const char *path)
{
  struct image image = { 0, 0, NULL };
  FILE *file = fopen (path, "rb");
  if (file == NULL)
    die (path);
  if (fgetc (file) != 'P' || fgetc (file) != '5')
    {
      fprintf (stderr, "feeder: %s is not a binary PGM\n", path);
      exit (2);
    }
  int width = pgm_token (file), height = pgm_token (file), maxval = pgm_token (file);
  if (width <= 0 || height <= 0 || maxval != 255)
    {
      fprintf (stderr, "feeder: %s has an unsupported PGM header\n", path);
      exit (2);
    }
  size_t size = (size_t) width * (size_t) height;
  image.pixels = malloc (size);
  if (image.pixels == NULL || fread (image.pixels, 1, size, file) != size)
    {
      fprintf (stderr, "feeder: %s: pixels are cut short\n", path);
      exit (2);
    }
  fclose (file);
  image.width = width;
  image.height = height;
  return image;
}

/* Splits "a,b,c" in place into at most MAX_ITEMS items. */
static int
split (char *list, char **items)
{
  int count = 0;
  for (char *item = strtok (list, ","); item != NULL && count < MAX_ITEMS; item = strtok (NULL, ","))
    items[count++] = item;
  return count;
}

static int
try_connect (const char *path)
{
  struct sockaddr_un address = { .sun_family = AF_UNIX };
  size_t length = strlen (path);
  if (length >= sizeof address.sun_path)
    return -1;
  memcpy (address.sun_path, path, length + 1);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    die ("socket");
  if (connect (fd, (struct sockaddr *) &address, sizeof address) == 0)
    return fd;
  close (fd);
  return -1;
}

static void
sleep_microseconds (long microseconds)
{
  struct timespec pause = { 0, microseconds * 1000 };
  nanosleep (&pause, NULL);
}

/* Connects, retrying for up to 5 s while the driver is not listening yet. */
static int
connect_waiting (const char *path)
{
  for (int attempt = 0; attempt < 50000; attempt++)
    {
      int fd = try_connect (path);
      if (fd >= 0)
        return fd;
      sleep_microseconds (100);
    }
  fprintf (stderr, "feeder: the reader never listened on %s\n", path);
  stop ();
}

/* Sends one virtual_device command on its own connection and waits until the driver
 * has read it (it closes the connection), so that commands arrive in order. */
static void
send_command (int fd, const char *command)
{
  write_all (fd, command, strlen (command));
  shutdown (fd, SHUT_WR);
  char sink[64];
  while (read (fd, sink, sizeof sink) > 0)
    ;
  close (fd);
}

static int
is_prompt (const char *line)
{
  return strncmp (line, "Place your", 10) == 0 || strncmp (line, "Swipe your", 10) == 0 ||
         strstr (line, "\"event\":\"finger-needed\"") != NULL;
}

int
main (int argc, char **argv)
{
  if (argc < 5 || strcmp (argv[3], "--") != 0 ||
      (strcmp (argv[1], "image") != 0 && strcmp (argv[1], "device") != 0 &&
       strcmp (argv[1], "device-on-prompt") != 0))
    {
      fprintf (stderr, "usage: feeder image PGM[,PGM...] -- COMMAND [ARGS...]\n"
                       "       feeder device ID[,ID...] -- COMMAND [ARGS...]\n"
                       "       feeder device-on-prompt ID[,ID...] -- COMMAND [ARGS...]\n");
      return 64;
    }
  int image_mode = strcmp (argv[1], "image") == 0;
  int prompted = strcmp (argv[1], "device-on-prompt") == 0;
  char *items[MAX_ITEMS];
  int count = split (argv[2], items);
  if (count == 0)
    {
      fprintf (stderr, "feeder: nothing to present\n");
      return 64;
    }
  struct image images[MAX_ITEMS];
  if (image_mode)
    for (int i = 0; i < count; i++)
      images[i] = load_pgm (items[i]);

  const char *shared = getenv ("FEEDER_SOCKET");
  if (shared != NULL && *shared != '\0')
    /* A reader another process (touchgated) holds open: play its finger, leave its socket. */
    snprintf (socket_path, sizeof socket_path, "%s", shared);
  else
    {
      const char *base = getenv ("TMPDIR");
      snprintf (directory, sizeof directory, "%s/feeder-XXXXXX", base != NULL && *base != '\0' ? base : "/tmp");
      if (mkdtemp (directory) == NULL)
        {
          directory[0] = '\0';
          die ("mkdtemp");
        }
      snprintf (socket_path, sizeof socket_path, "%s/reader.socket", directory);
    }
  if (strlen (socket_path) >= sizeof ((struct sockaddr_un *) 0)->sun_path)
    {
      fprintf (stderr, "feeder: socket path too long: %s\n", socket_path);
      return 2;
    }
  if (directory[0] != '\0')
    {
      setenv (image_mode ? "FP_VIRTUAL_IMAGE" : "FP_VIRTUAL_DEVICE", socket_path, 1);
      setenv ("FP_DRIVERS_WHITELIST", image_mode ? "virtual_image" : "virtual_device", 1);
    }

  int errors[2];
  if (pipe2 (errors, O_CLOEXEC) != 0)
    die ("pipe");
  child = fork ();
  if (child < 0)
    die ("fork");
  if (child == 0)
    {
      dup2 (errors[1], STDERR_FILENO);
      execvp (argv[4], argv + 4);
      fprintf (stderr, "feeder: cannot run %s: %s\n", argv[4], strerror (errno));
      _exit (127);
    }
  close (errors[1]);
  signal (SIGPIPE, SIG_IGN);
  struct sigaction forwarding = { .sa_handler = forward };
  sigemptyset (&forwarding.sa_mask);
  sigaction (SIGTERM, &forwarding, NULL);
  sigaction (SIGINT, &forwarding, NULL);

  int next = 0;          /* next item to present */
  int connection = -1;   /* virtual_image's persistent connection */
  char line[8192];
  size_t used = 0;
  for (;;)
    {
      int ahead = !image_mode && !prompted && next < count;
      struct pollfd waiting = { .fd = errors[0], .events = POLLIN };
      int ready = poll (&waiting, 1, ahead ? 0 : -1);
      if (ready < 0 && errno != EINTR)
        die ("poll");
      if (ahead)
        {
          int fd = try_connect (socket_path);
          if (fd >= 0)
            {
              char command[256];
              for (; next < count; next++)
                {
                  snprintf (command, sizeof command, "SCAN %s", items[next]);
                  send_command (fd, command);
                  fd = next + 1 < count ? connect_waiting (socket_path) : -1;
                }
            }
          else if (ready == 0)
            sleep_microseconds (250);
        }
      if (ready <= 0)
        continue;
      ssize_t got = read (errors[0], line + used, sizeof line - 1 - used);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        break;
      write_all (STDERR_FILENO, line + used, (size_t) got);
      used += (size_t) got;
      line[used] = '\0';
      char *start = line, *newline;
      while ((newline = strchr (start, '\n')) != NULL)
        {
          *newline = '\0';
          if (prompted && is_prompt (start))
            {
              char command[256];
              snprintf (command, sizeof command, "SCAN %s", items[next < count ? next : count - 1]);
              if (next < count - 1)
                next++;
              send_command (connect_waiting (socket_path), command);
            }
          else if (image_mode && is_prompt (start))
            {
              struct image *image = &images[next < count ? next : count - 1];
              if (next < count - 1)
                next++;
              int32_t size[2] = { image->width, image->height };
              size_t pixels = (size_t) image->width * (size_t) image->height;
              for (int attempt = 0;; attempt++)
                {
                  if (connection < 0)
                    connection = connect_waiting (socket_path);
                  if (write_or_closed (connection, size, sizeof size)
                      && write_or_closed (connection, image->pixels, pixels))
                    break;
                  close (connection);
                  connection = -1;
                  if (attempt == 1)
                    die ("write to the reader");
                }
            }
          start = newline + 1;
        }
      used = (size_t) (line + used - start);
      memmove (line, start, used);
      if (used == sizeof line - 1)
        used = 0; /* an overlong line is not a prompt */
    }

  int status = 0;
  while (waitpid (child, &status, 0) < 0)
    if (errno != EINTR)
      die ("waitpid");
  if (connection >= 0)
    close (connection);
  if (directory[0] != '\0')
    {
      unlink (socket_path);
      rmdir (directory);
    }
  if (WIFSIGNALED (status))
    return 128 + WTERMSIG (status);
  return WEXITSTATUS (status);
}
