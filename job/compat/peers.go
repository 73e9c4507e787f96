package compat

// PeerFlags are flags of Open MPI and Hydra that prsh does not have, and
// what to do instead.
var PeerFlags = map[string]string{
	"prefix":        "Open MPI's --prefix: put mpirun and orted at the same path on every node, or give --orted PATH",
	"rankfile":      "Open MPI's --rankfile: not supported; use -H with slots, --map-by or -npernode",
	"configfile":    "Hydra's -configfile: use --app FILE (one program per line), or separate the programs by ':'",
	"iface":         "Hydra's -iface: give mpirun's address with --listen-ip",
	"bind":          "--bind was renamed --listen-ip (the address mpirun listens on); to bind ranks Open MPI uses --bind-to",
	"am":            "Open MPI's -am: give the file's parameters with --mca KEY VALUE",
	"debug-daemons": "Open MPI's --debug-daemons: -v (--log-level debug) shows the daemons' logs",
	"npersocket":    "Open MPI's -npersocket: use --map-by socket with -npernode, or --map-by ppr:N:node",
	"tune":          "Open MPI's --tune: give the file's parameters with --mca KEY VALUE, its variables with -x",
}
