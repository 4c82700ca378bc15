/* The control socket's operations. A request is one REQUEST frame holding
 * {"op": NAME, ...}; the CLI sends it through the client function named
 * after it (client.h), the monitor serves it through its dispatch table
 * (monitor-control.c). This header is the one list of both sides. */
#ifndef SBX_PROTO_OPS_H
#define SBX_PROTO_OPS_H

typedef enum sbx_op {
  SBX_OP_EXEC,        /* argv, env, cwd, user, tty, stdin, detach, timeout_ms, rows, cols, end */
  SBX_OP_TERMINATE,   /* answered {"ok":true}, then EOF when the monitor exits */
  SBX_OP_WAIT,        /* answered by EOF when the monitor exits */
  SBX_OP_TTL,         /* seconds -> {"deadline"} */
  SBX_OP_PAUSE,       /* -> {"paused":true} */
  SBX_OP_RESUME,      /* -> {"paused":false} */
  SBX_OP_SNAPSHOT,    /* path -> {"ok", "next_chan", "procs"} */
  SBX_OP_NET,         /* mode, allow -> {"mode", "allow"} */
  SBX_OP_EXPOSE,      /* port -> {"port", "url", "public"} */
  SBX_OP_ROOTFD,      /* -> {"ok":true} with the root's O_PATH fd (SCM_RIGHTS) */
  SBX_OP_PS,          /* -> {"processes": [...]} */
  SBX_OP_PROC_STATUS, /* pid -> the process */
  SBX_OP_PROC_WAIT,   /* pid, timeout_ms -> the process, once it ended */
  SBX_OP_PROC_KILL,   /* pid, signal -> {"ok":true} */
  SBX_OP_PROC_LOGS,   /* pid, follow -> STDOUT/STDERR frames, then the process */
  SBX_OP_PING,        /* -> {"ok":true} */
  SBX_OP_UNEXPOSE,    /* port -> {"port"}; NOT_FOUND when it is not exposed */
  SBX_OP_UPDATE,      /* cpu, memory, pids, keep_warm, timeout (each optional) -> the values and "deadline" */
  SBX_OP_CLAIM,       /* pool, name, env, cwd, on_idle_pause, update, net, ports, public -> {"ok":true} */
  SBX_OP__MAX
} sbx_op;

const char *sbx_op_name (sbx_op op);
/* SBX_OP__MAX for a name that is no operation. */
sbx_op sbx_op_from_name (const char *name);

#endif
