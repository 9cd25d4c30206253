// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - instantiates the tracepoints declared in xiw_trace.h.
 */
#define CREATE_TRACE_POINTS
#include "xiw_trace.h"
