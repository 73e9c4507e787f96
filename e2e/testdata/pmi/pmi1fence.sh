#!/bin/sh
# PMI-1 spoken by hand on descriptor 3, as MPICH's client would: every rank
# but RANK puts a key and waits in a barrier that RANK never enters.
#
#   pmi1fence.sh kill RANK    RANK SIGKILLs itself once the others all wait
#   pmi1fence.sh idle RANK    RANK writes $MARKS/ready once they all wait,
#                             and sleeps
#   pmi1fence.sh exit0 RANK   RANK exits 0 without a barrier or finalize
#                             once they all wait
#
# With WAITERS_IGNORE_TERM=1 the waiting ranks ignore SIGTERM, so that a
# barrier that wrongly completes while the job is being ended is seen.
#
# A waiting rank first writes $MARKS/fence.<rank> holding its pid; RANK
# acts once each of them is blocked reading its PMI socket (the shell's
# read builtin reads it as its standard input: read(0, ...) in
# /proc/PID/syscall). Failures: one line on stderr, exit status 1.
mode=$1 special=$2

die() {
	echo "rank $PRSH_RANK: $*" >&2
	exit 1
}

request() {
	printf '%s\n' "$1" >&3
	IFS= read -r reply <&3 || die "no reply to $1"
}

mark() {
	echo $$ >"$MARKS/$1.tmp" && mv "$MARKS/$1.tmp" "$MARKS/$1" || die "cannot write $MARKS/$1"
}

await_blocked() {
	i=0
	while [ $i -lt 6000 ]; do
		if [ -s "$MARKS/$1" ]; then
			pid=$(cat "$MARKS/$1")
			if read -r nr fd rest <"/proc/$pid/syscall" && [ "$nr" = 0 ] && [ "$fd" = 0x0 ]; then
				return
			fi
		fi
		sleep 0.01
		i=$((i + 1))
	done
	die "$1 never blocked on its PMI socket"
}

request "cmd=init pmi_version=1 pmi_subversion=1"
[ "$reply" = "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0" ] || die "init: $reply"
request "cmd=get_my_kvsname"
case $reply in "cmd=my_kvsname kvsname="?*) ;; *) die "get_my_kvsname: $reply" ;; esac

if [ "$PRSH_RANK" != "$special" ]; then
	request "cmd=put kvsname=${reply#*kvsname=} key=key-$PRSH_RANK value=v"
	[ "$reply" = "cmd=put_result rc=0 msg=success" ] || die "put: $reply"
	[ "${WAITERS_IGNORE_TERM:-}" = 1 ] && trap '' TERM
	mark "fence.$PRSH_RANK"
	request "cmd=barrier_in"
	die "the barrier returned without rank $special: $reply"
fi

r=0
while [ $r -lt "$PRSH_SIZE" ]; do
	[ $r = "$special" ] || await_blocked "fence.$r"
	r=$((r + 1))
done
case $mode in
kill) kill -KILL $$ ;;
exit0) exit 0 ;;
idle)
	mark ready
	while :; do sleep 1; done
	;;
esac
die "unknown mode $mode"
