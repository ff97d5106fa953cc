/* phcclock: a pipeline clock that follows a PTP hardware clock (/dev/ptpN).
 *
 * A GstClock can only be waited on if it is a system clock, and a
 * GstSystemClock sleeps on a kernel clock id of its own; a PHC's dynamic
 * clock id (FD_TO_CLOCKID) cannot be slept on.  So the clock returned is a
 * monotonic GstSystemClock slaved (gst_clock_set_master) to a small
 * GstClock that reads the PHC with clock_gettime(FD_TO_CLOCKID(fd)): the
 * slave samples the PHC every 100 ms and keeps a linear regression over 32
 * samples; its initial calibration is set from one reading of both clocks,
 * so its time is the PHC's time from the first call on.
 *
 * Not run on hardware: this machine has no /dev/ptp*. */
#ifndef PHC_CLOCK_H
#define PHC_CLOCK_H

#include <gst/gst.h>

/* a new clock (owned reference) or NULL with error set */
GstClock *phc_clock_new_slaved (const gchar * device, GError ** error);

#endif
