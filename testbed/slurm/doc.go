// Package slurm runs a real Slurm cluster on one machine, for testing a
// launcher inside allocations (salloc, sbatch, srun) with Debian's Slurm:
//
//	c, err := slurm.Start(slurm.Config{Nodes: 4, CPUs: 2})
//	out, err := c.Command(ctx, "salloc", "-N", "4", "srun", "hostname").Output()
//	err = c.Close()
//
// The whole cluster lives in private network, mount, UTS and PID
// namespaces (root only; Available says why not), so the host's network,
// /etc/hosts, hostname and /etc/slurm stay untouched and nothing outlives
// the cluster: its init is PID 1 of the namespace, and when init exits the
// kernel kills every process left in it. Inside, init brings lo up with
// 127.0.10.254 for the controller (slurmctl) and 127.0.10.I for nodeI
// (glibc resolves nothing while lo has only 127.0.0.1), binds a hosts file
// over /etc/hosts, and starts munged (its own key and socket in the
// cluster's directory), slurmctld and one slurmd per node, each slurmd on
// a port of its own and in its own UTS and mount namespaces: hostname
// nodeI and a /tmp of its own (DIR/tmp/nodeI), which its tasks inherit.
// Directories under /tmp listed in Config.Shared, the cluster's own
// directory and the caller's working directory stay visible on every
// node, like a shared file system.
//
// Start returns when sinfo shows every node idle (about a second for 4 or
// 8 nodes). Command runs a command on the controller through nsenter,
// with SLURM_CONF set. Leftovers lists the processes of the cluster that
// are not its daemons (slurmstepd, tasks, commands), with the node each
// runs on; Close waits briefly for them to end, reports those still
// running as its error, stops the daemons and checks that the namespace
// is empty.
//
// The slurm.conf is minimal: no accounting, proctrack/linuxproc,
// task/none (task/affinity with Config.BindTasks: each node's tasks bound
// to the CPUs of the job there, numbered as on the one real machine;
// task/cgroup would share the host's cgroup hierarchy between clusters),
// select/cons_tres with CR_CPU, MpiDefault=none, daemons as root. Any user
// may reach munged's socket, so salloc and sbatch work for ordinary users
// who can read the cluster's directory. It must not set CommunicationParameters=NoInAddrAny: the slurmd's
// then listen on their node's address only and step I/O fails
// ("connect io: Connection refused"). The daemons are Debian's -wlm
// binaries (slurmctld-wlm -D -c -i, slurmd-wlm -D -N nodeI), whose build
// supports several slurmd's on one host.
package slurm
