#!/usr/bin/perl
# restore-ping.pl CMD...: what sbx's monitor does to restore a snapshot,
# without sbx. Runs CMD (a foreground `runsc restore` of an sbx checkpoint)
# with its stdin and stdout one end of a socketpair: the restored sbx-init
# finds its control socket there again. Sends it a PING, prints the
# microseconds from just before CMD started to the PONG (the restored agent
# is running and answers), then asks it to shut down and waits for CMD.
# Exit status 0 only when the PONG came and CMD exited 0.
#
# Frames are sbx's (src/lib/proto.h): u32 length, u16 type, u16 flags,
# u32 channel, little-endian, then the payload.
use strict;
use warnings;
use Socket;
use Time::HiRes qw(time);

my ($STDOUT, $STDERR, $CREDIT, $PING, $PONG, $SHUTDOWN) = (6, 7, 12, 13, 14, 15);
sub frame { my ($type, $chan, $p) = @_; return pack ("VvvV", length $p, $type, 0, $chan) . $p; }

@ARGV or die "usage: restore-ping.pl CMD...\n";
$SIG{PIPE} = 'IGNORE';  # a runsc that died early: say so, not die of SIGPIPE
socketpair (my $us, my $them, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die "socketpair: $!\n";
my $t0 = time;
my $pid = fork // die "fork: $!\n";
if ($pid == 0) {
  close $us;
  open (STDIN, "<&", $them) && open (STDOUT, ">&", $them) or exit 127;
  close $them;
  exec { $ARGV[0] } @ARGV;
  exit 127;
}
close $them;
syswrite ($us, frame ($PING, 0, "bench")) or die "write to the agent: $!\n";
my ($buf, $t1) = ('', undef);
READ: while (1) {
  my $n = sysread ($us, $buf, 65536, length $buf);
  last unless $n;
  while (length $buf >= 12) {
    my ($len, $type, undef, $chan) = unpack ("VvvV", $buf);
    last if length $buf < 12 + $len;
    substr ($buf, 0, 12 + $len) = '';
    if ($type == $PONG && $chan == 0) { $t1 = time; last READ; }
    # Output of the restored processes: credit it, as the monitor does.
    syswrite ($us, frame ($CREDIT, $chan, pack ("V", $len))) if ($type == $STDOUT || $type == $STDERR) && $chan;
  }
}
syswrite ($us, frame ($SHUTDOWN, 0, ""));
waitpid ($pid, 0);
my $status = $?;
close $us;
defined $t1 or die "restore-ping.pl: no PONG from the restored agent (exit status $status)\n";
printf "%d\n", ($t1 - $t0) * 1e6;
exit ($status == 0 ? 0 : 1);
