// Package pmi serves the PMI wire protocols that MPICH-family MPI libraries
// use to start up: PMI-1 ("simple", one text line per message) and PMI-2
// (length-prefixed frames), as the real MPICH 4.0.2 and Slurm libpmi2
// clients speak them (WIRE.md has every detail and the evidence behind
// it).
//
// Serve answers one rank's connection — the socket the rank found in
// PMI_FD — and turns what needs the rest of the job into calls on a
// Backend, which the daemon implements: puts, the fence, gets from the
// daemon's copy of the job's store, node attributes, the ring, the
// allgather extension, MPI_Comm_spawn (as a modex.SpawnRequest) and the
// name service, abort and finalize. Serve holds no job state of
// its own; it is the translation between bytes and those calls, so the
// daemon's loop stays the only owner of the store.
//
// EXTENSIONS.md documents the commands beyond PMI-2 itself (ring,
// allgather, and how Ifence and Iallgather work over one socket);
// package client is a Go client that uses them. It also documents Port,
// PMI_PORT: how a rank's client that does not hold its inherited socket
// reaches its server over loopback TCP, and the rule that only that rank
// can claim its identity.
//
// The gotchas it deals with, in brief:
//
//   - The protocol is chosen per message: PMI-1 lines start with "cmd=" or
//     "mcmd=", PMI-2 frames with a digit or a space. A PMI-2 client opens
//     with a PMI-1 init line.
//   - MPICH 4.0.2's PMI-2 client declares 6 bytes more than its frame body
//     and sends 6 bytes of stack garbage, which can begin with ';'. The
//     first frame, always fullinit and always ending in threaded=...;,
//     tells whether this client does so; Slurm's libpmi2 does not.
//   - PMI-1 has no escaping and MPICH reads at most 1023 characters per
//     reply line: a longer reply would be taken for the next one, so values
//     that do not fit are refused. A put's value runs to the end of its
//     line (Open MPI's values end in " -").
//   - A get of a missing key fails at once; info-getnodeattr with
//     wait=TRUE waits for a later put on the same node.
//   - Abort gets no reply, and the connection stays open until the job is
//     killed: closing it would make MPI_Abort return into the program.
//   - A PMI-1 spawn comes as one mcmd block per command, in several
//     writes, with one reply after the last; a PMI-2 spawn repeats its keys
//     once per command. A failed spawn is told in the one way each client
//     understands: PMI-1 rc=-1, PMI-2 a reply without rc.
package pmi
