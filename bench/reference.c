/*
 * reference: the libfprint calls `touchgate verify` and `touchgate identify` make, and
 * nothing else. The benchmark compares the two to find what Touchgate adds.
 *
 *   reference verify   GALLERY   open the first reader, verify a scan against the first print
 *   reference identify GALLERY   open the first reader, identify a scan among all the prints
 *
 * GALLERY is a file of serialized prints (fp_print_serialize blobs), each preceded by its
 * length as a 32-bit little-endian integer; `touchgate-bench export` writes one from a
 * Touchgate store. Every time the reader starts waiting for a finger, a prompt line
 * ("Place your finger on the reader") goes to standard error, as touchgate prints one,
 * so the same feeder answers both programs the same way.
 *
 * Exit status: 0 match, 1 no match, 2 any error.
 *
 * Build: gcc -O2 -Wall -Wextra -o reference reference.c $(pkg-config --cflags --libs libfprint-2)
 */
#include <fprint.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads GALLERY into an array of deserialized prints (owned by the array). */
static GPtrArray *
load_gallery (const char *path)
{
  gchar *contents = NULL;
  gsize length = 0;
  g_autoptr(GError) error = NULL;

  if (!g_file_get_contents (path, &contents, &length, &error))
    {
      fprintf (stderr, "reference: %s\n", error->message);
      return NULL;
    }

  GPtrArray *prints = g_ptr_array_new_with_free_func (g_object_unref);
  gsize offset = 0;
  while (offset < length)
    {
      const guchar *bytes = (const guchar *) contents + offset;
      if (length - offset < 4)
        goto damaged;
      uint32_t size = (uint32_t) bytes[0] | (uint32_t) bytes[1] << 8 |
                      (uint32_t) bytes[2] << 16 | (uint32_t) bytes[3] << 24;
      if (length - offset - 4 < size)
        goto damaged;
      FpPrint *print = fp_print_deserialize (bytes + 4, size, &error);
      if (print == NULL)
        {
          fprintf (stderr, "reference: print %u: %s\n", prints->len, error->message);
          g_ptr_array_unref (prints);
          g_free (contents);
          return NULL;
        }
      g_ptr_array_add (prints, print);
      offset += 4 + (gsize) size;
    }
  g_free (contents);
  if (prints->len == 0)
    {
      fprintf (stderr, "reference: %s holds no prints\n", path);
      g_ptr_array_unref (prints);
      return NULL;
    }
  return prints;

damaged:
  fprintf (stderr, "reference: %s is truncated\n", path);
  g_ptr_array_unref (prints);
  g_free (contents);
  return NULL;
}

/* Prompts once each time the reader starts waiting for a finger. */
static void
on_finger_status (FpDevice *device, GParamSpec *spec, gpointer user_data)
{
  gboolean *waiting = user_data;
  gboolean needed = (fp_device_get_finger_status (device) & FP_FINGER_STATUS_NEEDED) != 0;

  (void) spec;
  if (needed && !*waiting)
    {
      fputs ("Place your finger on the reader\n", stderr);
      fflush (stderr);
    }
  *waiting = needed;
}

int
main (int argc, char **argv)
{
  if (argc != 3 || (strcmp (argv[1], "verify") != 0 && strcmp (argv[1], "identify") != 0))
    {
      fprintf (stderr, "usage: reference verify|identify GALLERY\n");
      return 2;
    }
  gboolean identify = strcmp (argv[1], "identify") == 0;

  g_autoptr(GPtrArray) prints = load_gallery (argv[2]);
  if (prints == NULL)
    return 2;

  g_autoptr(FpContext) context = fp_context_new ();
  GPtrArray *devices = fp_context_get_devices (context);
  if (devices == NULL || devices->len == 0)
    {
      fprintf (stderr, "reference: no reader\n");
      return 2;
    }
  FpDevice *device = g_ptr_array_index (devices, 0);

  gboolean waiting = FALSE;
  g_signal_connect (device, "notify::finger-status", G_CALLBACK (on_finger_status), &waiting);

  g_autoptr(GError) error = NULL;
  if (!fp_device_open_sync (device, NULL, &error))
    {
      fprintf (stderr, "reference: open: %s\n", error->message);
      return 2;
    }

  gboolean matched = FALSE;
  gboolean done;
  if (identify)
    {
      g_autoptr(FpPrint) match = NULL;
      done = fp_device_identify_sync (device, prints, NULL, NULL, NULL, &match, NULL, &error);
      matched = match != NULL;
    }
  else
    {
      done = fp_device_verify_sync (device, g_ptr_array_index (prints, 0), NULL, NULL, NULL,
                                    &matched, NULL, &error);
    }
  if (!done)
    fprintf (stderr, "reference: %s: %s\n", argv[1], error->message);

  g_autoptr(GError) close_error = NULL;
  if (!fp_device_close_sync (device, NULL, &close_error))
    {
      fprintf (stderr, "reference: close: %s\n", close_error->message);
      return 2;
    }
  if (!done)
    return 2;
  puts (matched ? "match" : "no match");
  return matched ? 0 : 1;
}
