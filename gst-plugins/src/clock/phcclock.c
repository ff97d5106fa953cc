/* phcclock: see phcclock.h. */
#include "phcclock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* linux/posix-timers.h; not exported to user space by every libc */
#define FD_TO_CLOCKID(fd) ((clockid_t) ((((unsigned int) ~(fd)) << 3) | 3))

#define PHC_TYPE_READER (phc_reader_get_type ())
G_DECLARE_FINAL_TYPE (PhcReader, phc_reader, PHC, READER, GstClock);

struct _PhcReader
{
  GstClock parent;
  int fd;
};

G_DEFINE_TYPE (PhcReader, phc_reader, GST_TYPE_CLOCK);

static GstClockTime
phc_reader_get_internal_time (GstClock * clock)
{
  struct timespec ts;

  if (clock_gettime (FD_TO_CLOCKID (PHC_READER (clock)->fd), &ts) != 0)
    return GST_CLOCK_TIME_NONE;
  return GST_TIMESPEC_TO_TIME (ts);
}

static void
phc_reader_finalize (GObject * object)
{
  PhcReader *self = PHC_READER (object);

  if (self->fd >= 0)
    close (self->fd);
  G_OBJECT_CLASS (phc_reader_parent_class)->finalize (object);
}

static void
phc_reader_class_init (PhcReaderClass * klass)
{
  G_OBJECT_CLASS (klass)->finalize = phc_reader_finalize;
  GST_CLOCK_CLASS (klass)->get_internal_time = phc_reader_get_internal_time;
}

static void
phc_reader_init (PhcReader * self)
{
  self->fd = -1;
}

GstClock *
phc_clock_new_slaved (const gchar * device, GError ** error)
{
  PhcReader *reader;
  GstClock *clock;
  struct timespec probe;
  GstClockTime internal, external;
  int fd = open (device, O_RDONLY | O_CLOEXEC);

  if (fd < 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "cannot open: %s", g_strerror (errno));
    return NULL;
  }
  if (clock_gettime (FD_TO_CLOCKID (fd), &probe) != 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "not a PTP hardware clock: %s", g_strerror (errno));
    close (fd);
    return NULL;
  }
  reader = g_object_new (PHC_TYPE_READER, "name", "clockbridge-phc", NULL);
  gst_object_ref_sink (reader);
  reader->fd = fd;

  clock = g_object_new (GST_TYPE_SYSTEM_CLOCK, "name", "clockbridge-clock",
      "clock-type", GST_CLOCK_TYPE_MONOTONIC, NULL);
  gst_object_ref_sink (clock);
  GST_OBJECT_FLAG_SET (clock, GST_CLOCK_FLAG_CAN_SET_MASTER);
  internal = gst_clock_get_internal_time (clock);
  external = gst_clock_get_internal_time (GST_CLOCK (reader));
  gst_clock_set_calibration (clock, internal, external, 1, 1);
  if (!gst_clock_set_master (clock, GST_CLOCK (reader))) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
        "cannot slave the pipeline clock to it");
    gst_object_unref (reader);
    gst_object_unref (clock);
    return NULL;
  }
  /* the slave holds its master */
  gst_object_unref (reader);
  return clock;
}
