/* Capabilities: what sbx needs to make a sandbox, checked up front, and
 * what a sandbox's monitor keeps once the sandbox runs. */
#ifndef SBX_CAPS_H
#define SBX_CAPS_H

#include "error.h"

/* 0 when this process holds (in its effective set) every capability that
 * making and running a sandbox takes; else PERMISSION_DENIED naming the
 * ones it lacks: "WHAT: sbx needs CAP_SYS_ADMIN, CAP_NET_ADMIN, ... (run
 * as root)". Changes nothing. */
int sbx_caps_require (const char *what, sbx_error **err);

/* For a monitor whose sandbox is set up: drops from the bounding, effective,
 * permitted and inheritable sets (and the ambient set) every capability but
 * those its control loop and teardown still use, and those the runtime's
 * commands it runs then (kill, delete, pause, resume, checkpoint) use. */
int sbx_caps_drop_monitor (sbx_error **err);

/* The capabilities sbx_caps_drop_monitor keeps, as a mask of 1 << CAP_*. */
unsigned long long sbx_caps_monitor_mask (void);

#endif
