package mpirun

// helpText is mpirun --help, written by hand to read like Open MPI's:
// grouped, one line per flag with its value, examples first.
// TestHelpNamesEveryFlag keeps it in step with flags().
const helpText = `Usage: mpirun [options] COMMAND [ARGS...] [: [options] COMMAND [ARGS...]]...

Runs COMMAND as the ranks of one parallel job on the nodes of a cluster
reached over ssh: one orted per node, started along a tree.

Examples:
  mpirun -H node[01-16]:4 ./app              64 ranks, 4 on each node
  mpirun --hostfile hosts -np 32 ./app       hostfile lines: "n1 slots=16"
  mpirun -np 1 ./server : -np 8 ./client     two programs, one world
  mpirun -x OMP_NUM_THREADS=4 --map-by slot:PE=4 ./app
                                             4 threads a rank, on 4 cores

Where the ranks run:
  -np, -n, -c N                 ranks (default: one per slot)
  -H, --host, -hosts LIST       hosts: a,b:4,node[01-16]; repeats add slots
  --hostfile, --machinefile, -f FILE
                                lines "host [slots=N] [max_slots=M]" or "host:N"
                                (default: $MPIRUN_HOSTFILE or $HYDRA_HOST_FILE,
                                else the Slurm, PBS or LSF allocation, else
                                $OMPI_MCA_orte_default_hostfile, else this host,
                                a slot per CPU)
  --map-by slot|node|socket|numa|l3cache|ppr:N:node[:PE=N][:OVERSUBSCRIBE]
                                fill each node's slots first (default), deal
                                round robin, fill by slot spreading each node's
                                bound ranks over its sockets (NUMA nodes, L3
                                caches), or N ranks per node; PE=N: each rank
                                takes N slots and N cores
  --cpus-per-rank, --cpus-per-proc N
                                as :PE=N (threaded ranks: add -x OMP_NUM_THREADS)
  --bind-to UNIT                bind each rank to a hwthread, core, l3cache,
                                numa node, socket or the board of its node
                                (default: none); UNIT:overload-allowed lets
                                more ranks than cores share them; core:N is
                                Hydra's PE=N
  --report-bindings             print each rank's binding (on stderr)
  --npernode, -N, -ppn N        ranks per node
  --oversubscribe               allow more ranks than slots
  --display-allocation          print the hosts and slots found (on stderr)
  --display-map                 print which ranks run where (on stderr); also
                                --display-devel-map, Hydra's -print-rank-map

The ranks' environment, input and output:
  -x VAR | VAR=value | 'GLOB*'  export to the ranks (by default only OMPI_*)
  -genv VAR value               Hydra's: set VAR
  -genvlist VAR1,VAR2           Hydra's: export these
  --mca, -gmca KEY VALUE        Open MPI's parameter, to the ranks as
                                OMPI_MCA_KEY=VALUE (-x and -genv win)
  -genvall | -genvnone          export all of mpirun's environment | none, not
                                even OMPI_*
  -env VAR value | -envlist V1,V2 | -envall | -envnone (Hydra's)
                                for the first program: -env sets VAR for its
                                ranks alone, the others act as -genv*
  --wdir DIR                    working directory (default: mpirun's, else home)
  --preload-binary, -s          copy the program to each node's TMPDIR, down the
                                spawn tree, and run that copy (removed at the end)
  --preload-libs                and the shared libraries it loads here (not glibc)
  --stdin RANK|all|none         who reads mpirun's stdin (default: 0)
  --tag-output                  prefix lines with [1,RANK]<stdout>:
  --prepend-rank, -l            prefix lines with [RANK]
  --timestamp-output            prefix lines with the time
  --output-filename DIR         write DIR/1/rank.N/stdout and stderr
  --merge-stderr-to-stdout      one stream
  --forward-signals SIG,...     more signals to forward (USR1, USR2 always are)
  --timeout SECONDS             stop the job after that long, exit 124
                                (default: $MPIEXEC_TIMEOUT)

After ':' a program takes -np N, -x VAR[=value], -env VAR value, --mca KEY VALUE,
--wdir DIR.
  --app FILE                    the programs, one per line, written as after ':'

Starting the daemons:
  --spawn-degree N|auto         daemons each daemon spawns (default: 32;
                                0 = along the routing tree; auto = the degree
                                whose tree spawns the nodes soonest, given:)
  --spawn-hop-hint D            a session's start until its orted can spawn
                                (default: 300ms)
  --spawn-cost-hint D           a spawner's time per session (default: 10ms)
  --routed radix|binomial|direct
                                topology of the launch (default: radix)
  --routed-radix K              its radix (default: the spawn degree)
  --launcher auto|ssh|srun      how daemons start (default: auto = srun, a job
                                step per daemon, inside a Slurm allocation
                                whose hosts the job runs on, else ssh); also
                                -launcher/-bootstrap rsh|slurm (Hydra's) and
                                --mca plm rsh|slurm (Open MPI's)
  --launch-agent 'CMD %h'       start daemons with CMD instead, e.g. 'ssh %h'
                                or 'srun --overlap -N1 -n1 -w %h'
  --ssh-config FILE             OpenSSH client config (default: ~/.ssh/config,
                                or $MPIRUN_SSH_CONFIG)
  --ssh-system-config FILE|none read after it (default: /etc/ssh/ssh_config;
                                none with --ssh-config, as ssh -F)
  --ssh-connect-timeout D       bound on one ssh connect, and on the server's
                                silence in its handshake (default: 10s)
  --ssh-max-sessions N          ssh sessions opened at once (default: 64)
  --callback-timeout D          bound on a started orted calling back (default: 30s)
  --on-unreachable abort|skip   a node that cannot be reached ends the job
                                (default), or is left out
  --every-host                  an orted on every host, ranks or not (default:
                                only where ranks go, as Open MPI's --novm,
                                accepted; child jobs start orteds on the
                                others when placed there)
  --hold-launch                 start no rank until every daemon has called
                                back (default: ranks start as daemons come)
  --kill-grace D                SIGTERM to SIGKILL when the job stops (default: 3s)
  --timeouts NAME=D,…           other bounds on a stall: silence (20s: a daemon
                                heard from for none of it is lost), guard-stopped
                                (30s: a rank's guard kills its daemon stopped that
                                long), drain (20s), hello, handshake, keep-alive,
                                stop-wait, pmi-drain, slot-wait (10s: a spawn
                                waits for ending child jobs' slots)
  --orted PATH                  the daemon on the nodes, for every job (default:
                                orted beside mpirun; orted-pmix for PMIx jobs)
  --pmix auto|on|off            boot each node's PMIx server (Open MPI); auto:
                                unless every program is found to link no MPI
                                library and to be no interpreter or script;
                                with --dvm: the job's PMIx namespace, the same way
  --listen-ip IP                mpirun's address (default: the one that
                                reaches the first node)
  --port-range LO-HI            mpirun and every orted listen on a port of it,
                                for firewalls that open only those (default:
                                $MPIEXEC_PORT_RANGE, else any port)

Persistent daemons (a DVM; prte, prun and pterm are these three):
  --dvm-start [--dvm-uri FILE]  spawn the daemons on the hosts and keep them
                                up; prints the DVM's URI once they are
    --daemonize                 in the background: exit once the DVM is up;
                                its lines go on into a file (mode 0600) beside
                                its socket's directory, .../prsh-dvm-XXXX.log,
                                which a clean --dvm-stop removes
  --dvm [URI|FILE]              run the job in that DVM (default: $PRSH_DVM):
                                its daemons are already up; jobs run at once
    --cc LIST                   run the job once for each number of LIST
                                (1-1000 or 0,4,8-11) from this one client,
                                {cc} in its command line becoming the number,
                                as many at a time as its hosts' free slots
                                hold; no stdin; --tag-output and
                                --output-filename name copy N as job N
  --dvm-stop [URI|FILE]         stop the DVM, leaving nothing on the nodes

Accepted from Open MPI's command line:
  --allow-run-as-root           no effect
  --bynode | --byslot           --map-by node | slot
  --bind-to-core | --bind-to-socket
                                --bind-to core | socket
  --use-hwthread-cpus           a slot per hardware thread where no slots are
                                given: prsh's default
  --nooversubscribe, --noprefix, --quiet, -q
                                no effect

Other:
  --report-launch-times         when each launch phase completed
  -v, --verbose                 logs on stderr (--log-level debug)
  --log-level LEVEL             trace, debug, info, warn (default), error, off
  --version                     the build
  -h, --help                    this text
`
