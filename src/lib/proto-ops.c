/* The control socket's operation names (proto-ops.h). */
#include "config.h"
#include "proto-ops.h"

#include <string.h>

static const char *const op_names[SBX_OP__MAX] = {
  [SBX_OP_EXEC] = "exec",
  [SBX_OP_TERMINATE] = "terminate",
  [SBX_OP_WAIT] = "wait",
  [SBX_OP_TTL] = "ttl",
  [SBX_OP_PAUSE] = "pause",
  [SBX_OP_RESUME] = "resume",
  [SBX_OP_SNAPSHOT] = "snapshot",
  [SBX_OP_NET] = "net",
  [SBX_OP_EXPOSE] = "expose",
  [SBX_OP_ROOTFD] = "rootfd",
  [SBX_OP_PS] = "ps",
  [SBX_OP_PROC_STATUS] = "proc_status",
  [SBX_OP_PROC_WAIT] = "proc_wait",
  [SBX_OP_PROC_KILL] = "proc_kill",
  [SBX_OP_PROC_LOGS] = "proc_logs",
  [SBX_OP_PING] = "ping",
  [SBX_OP_UNEXPOSE] = "unexpose",
  [SBX_OP_UPDATE] = "update",
  [SBX_OP_CLAIM] = "claim",
};

const char *
sbx_op_name (sbx_op op)
{
  return op < SBX_OP__MAX ? op_names[op] : "unknown";
}

sbx_op
sbx_op_from_name (const char *name)
{
  for (int i = 0; i < SBX_OP__MAX; i++)
    if (strcmp (name, op_names[i]) == 0)
      return (sbx_op) i;
  return SBX_OP__MAX;
}
